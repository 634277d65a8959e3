// `npm start` / `kv-dc-relay demo`: a relay on 127.0.0.1:5561 fed by simulated vLLM engines on
// loopback — an aggregated model on two data-parallel ranks and a prefill/decode pair — with the
// live watch view of what it publishes. Ctrl-C stops everything.
//
// The engines bind OS-chosen ports, so the demo writes its config (YAML) into a temporary folder and
// prints the path: editing that file while the demo runs exercises hot reload. A clean stop removes
// the folder (--keep leaves it, and says where).
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { stringify } from 'yaml';
import { createLogger } from '../log';
import { SimulatedEngine } from '../sim';
import { startRelay, type RunningRelay } from '../server/start-relay';
import type { CliIo } from './io';
import { EXIT } from './usage';
import { runWatch } from './watch';

export const DEMO_BIND = '127.0.0.1:5561';
const DEMO_BLOCK_SIZE = 16;
const DEMO_CAPACITY_BLOCKS = 512;
const WORKLOAD_INTERVAL_MS = 50;

interface DemoEngine {
  engine: SimulatedEngine;
  workerId: number;
}

export interface Demo {
  readonly relay: RunningRelay;
  /** The temporary folder holding the config, the log and the prompt. */
  readonly dir: string;
  readonly configFile: string;
  readonly logFile: string;
  /** Token ids (comma-separated) of a prompt the aggregated model has cached a prefix of. */
  readonly promptFile: string;
  stop(): Promise<void>;
}

async function startEngine(workerId: number, dpSize: number, seed: number, loraNames: (string | null)[]): Promise<DemoEngine> {
  const engine = new SimulatedEngine({
    dpSize,
    envelope: 'map',
    events: 'map',
    workload: { seed, blockSize: DEMO_BLOCK_SIZE, capacityBlocks: DEMO_CAPACITY_BLOCKS, loraNames },
  });
  await engine.start();
  return { engine, workerId };
}

function worker({ engine, workerId }: DemoEngine, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: workerId,
    dpSize: engine.dpSize,
    totalKvBlocks: DEMO_CAPACITY_BLOCKS,
    maxNumSeqs: 128,
    health: { url: `${engine.httpUrl}/health` },
    metrics: { url: `${engine.httpUrl}/metrics`, format: 'vllm' },
    kvEvents: { endpoint: engine.pubEndpoint, replayEndpoint: engine.replayEndpoint, topic: '', mode: 'connect' },
    ...extra,
  };
}

/** The demo deployment: what an operator would write for these three engines. */
function demoConfig(bind: string, aggregated: DemoEngine, prefill: DemoEngine, decode: DemoEngine): Record<string, unknown> {
  const llama = { name: 'llama-3.1-8b', sourcePath: 'meta-llama/Llama-3.1-8B-Instruct', kvBlockSize: DEMO_BLOCK_SIZE, aliases: ['llama'] };
  const qwen = { name: 'qwen-2.5-32b', sourcePath: 'Qwen/Qwen2.5-32B-Instruct', kvBlockSize: DEMO_BLOCK_SIZE };
  return {
    dcId: 'dc-demo',
    bind,
    expectedUniqueBlocks: 65536,
    timing: { poolHeartbeatMs: 2000, readinessHeartbeatMs: 2000 },
    endpoints: [
      {
        namespace: 'demo',
        component: 'backend',
        endpoint: 'generate',
        model: llama,
        workerType: 'aggregated',
        adapters: [{ name: 'support-lora', servedModel: 'llama-support', workers: [aggregated.workerId] }],
        workers: [worker(aggregated)],
      },
      {
        namespace: 'demo',
        component: 'prefill',
        endpoint: 'generate',
        model: qwen,
        workerType: 'prefill',
        workers: [worker(prefill)],
      },
      {
        namespace: 'demo',
        component: 'decode',
        endpoint: 'generate',
        model: qwen,
        workerType: 'decode',
        needs: [['prefill']],
        workers: [worker(decode)],
      },
    ],
  };
}

export async function startDemo(options: { bind?: string; dir?: string } = {}): Promise<Demo> {
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-demo-'));
  const engines = [
    await startEngine(1, 2, 1, [null, null, 'support-lora']),
    await startEngine(10, 1, 2, [null]),
    await startEngine(11, 1, 3, [null]),
  ];
  const configFile = path.join(dir, 'relay.yaml');
  const logFile = path.join(dir, 'relay.log');
  // `query` finds this prompt's prefix cached once the aggregated engine served a conversation on it.
  const promptFile = path.join(dir, 'prompt.txt');
  fs.writeFileSync(promptFile, engines[0].engine.workload.sharedPrefixPrompt().join(','));
  const [aggregated, prefill, decode] = engines;
  fs.writeFileSync(configFile, stringify(demoConfig(options.bind ?? DEMO_BIND, aggregated, prefill, decode)));

  const logger = createLogger({ destination: fs.openSync(logFile, 'a') });
  let relay: RunningRelay;
  try {
    relay = await startRelay({ configFile, logger });
  } catch (err) {
    await Promise.all(engines.map((e) => e.engine.stop()));
    if (options.dir === undefined) fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  for (const { engine } of engines) engine.startWorkload(WORKLOAD_INTERVAL_MS);

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      for (const { engine } of engines) engine.stopWorkload();
      await relay.shutdown();
      await Promise.all(engines.map((e) => e.engine.stop()));
    })();
    return stopped;
  };
  return { relay, dir, configFile, logFile, promptFile, stop };
}

export interface DemoFlags {
  bind?: string;
  json?: boolean;
  /** Leave the temporary folder (config, log, prompt) in place after a stop. */
  keep?: boolean;
}

/** `kv-dc-relay demo`: runs until SIGINT/SIGTERM (exit 0) or a relay transport failure (exit 1). */
export async function runDemo(flags: DemoFlags, io: CliIo): Promise<number> {
  let demo: Demo;
  try {
    demo = await startDemo({ bind: flags.bind });
  } catch (err) {
    io.stderr.write(`demo: the relay did not start: ${(err as Error).message}\n`);
    return EXIT.failure;
  }
  const banner =
    `kv-dc-relay demo: relay on ${demo.relay.address}\n  config (edit it live): ${demo.configFile}\n  relay log: ${demo.logFile}\n` +
    `  try: npx kv-dc-relay query ${demo.relay.address} --model llama --tokens-file ${demo.promptFile}\n  Ctrl-C stops\n`;
  io.stderr.write(banner);
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  let failed = false;
  void demo.relay.failed.then(() => {
    failed = true;
    io.stderr.write(`kv-dc-relay demo: the relay transport failed (see ${demo.logFile}); stopping\n`);
    abort.abort();
  });
  await runWatch({ address: demo.relay.address, json: flags.json, out: io.stdout, signal: abort.signal, subscriberId: 'kv-dc-relay-demo', banner });
  await demo.stop();
  // A failed run keeps its folder: the log says why.
  if (flags.keep || failed) {
    io.stderr.write(`kv-dc-relay demo: stopped; config, log and prompt kept in ${demo.dir}\n`);
  } else {
    fs.rmSync(demo.dir, { recursive: true, force: true });
    io.stderr.write(`kv-dc-relay demo: stopped; removed ${demo.dir}\n`);
  }
  return failed ? EXIT.failure : EXIT.ok;
}
