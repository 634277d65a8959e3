// `kv-dc-relay sim-engine`: a standalone simulated vLLM worker (the demo's engine) for "one relay
// against one engine" without vLLM: KV events in vLLM's wire format on a ZMQ PUB per data-parallel
// rank (and a replay ROUTER when asked), /health and /metrics over HTTP, driven by a realistic
// workload (conversations sharing system prompts, LRU eviction). It prints the relay config of the
// worker it simulates, then runs until SIGINT/SIGTERM.
import { stringify } from 'yaml';
import { SimulatedEngine, Workload } from '../sim';
import type { CliIo } from './io';
import { EXIT } from './usage';

export interface SimEngineFlags {
  host: string;
  port: number;
  replayPort?: number;
  httpPort: number;
  blockSize: number;
  /** Workload batches per second. */
  rate: number;
  seed: number;
  dpSize: number;
  capacityBlocks: number;
  topic: string;
  /** LoRA adapters some conversations use (besides the base model). */
  lora: string[];
  /** The worker id the printed config snippet uses (the engine's events do not carry it). */
  workerId: number;
  /** Print the token ids of a prompt whose prefix the engine will cache (for `query`), and exit. */
  printPrompt?: boolean;
}

/** A timer period and batches per tick that publish `rate` batches per second (1 ms timer floor). */
export function workloadPacing(rate: number): { intervalMs: number; stepsPerTick: number } {
  const intervalMs = Math.max(1, Math.round(1000 / rate));
  return { intervalMs, stepsPerTick: Math.max(1, Math.round((rate * intervalMs) / 1000)) };
}

/** The `workers` entry of a relay config (relay-config.md) that reads this engine. */
export function simWorkerConfig(engine: SimulatedEngine, flags: SimEngineFlags): Record<string, unknown> {
  return {
    id: flags.workerId,
    dpSize: engine.dpSize,
    totalKvBlocks: flags.capacityBlocks,
    health: { url: `${engine.httpUrl}/health` },
    metrics: { url: `${engine.httpUrl}/metrics`, format: 'vllm' },
    kvEvents: {
      endpoint: engine.pubEndpoint,
      ...(engine.replayEndpoint ? { replayEndpoint: engine.replayEndpoint } : {}),
      topic: engine.topic,
      mode: 'connect',
    },
  };
}

/** Runs until SIGINT/SIGTERM (exit 0); a port that cannot be bound exits 1. */
export async function runSimEngine(flags: SimEngineFlags, io: CliIo): Promise<number> {
  const workload = { seed: flags.seed, blockSize: flags.blockSize, capacityBlocks: flags.capacityBlocks, loraNames: [null, ...flags.lora] };
  if (flags.printPrompt) {
    // The same seed gives the same system prompts: the running engine caches this prompt's prefix
    // once it served a conversation on system prompt 0.
    io.stdout.write(`${new Workload([0], workload).sharedPrefixPrompt().join(',')}\n`);
    return EXIT.ok;
  }
  const engine = new SimulatedEngine({
    host: flags.host,
    port: flags.port,
    dpSize: flags.dpSize,
    replay: flags.replayPort !== undefined,
    replayPort: flags.replayPort,
    httpPort: flags.httpPort,
    topic: flags.topic,
    // What vLLM 0.26 publishes: map-encoded events and envelope, main attention group.
    envelope: 'map',
    events: 'map',
    workload,
  });
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  try {
    await engine.start();
  } catch (err) {
    await engine.stop().catch(() => undefined);
    io.stderr.write(`sim-engine: cannot listen on ${flags.host} (port ${flags.port}, replay ${flags.replayPort ?? '-'}, http ${flags.httpPort}): ${(err as Error).message}\n`);
    return EXIT.failure;
  }
  const { intervalMs, stepsPerTick } = workloadPacing(flags.rate);
  engine.startWorkload(intervalMs, stepsPerTick);
  io.stderr.write(
    `sim-engine: vLLM KV events on ${engine.pubEndpoint}${engine.replayEndpoint ? ` (replay ${engine.replayEndpoint})` : ''}, ` +
      `/health and /metrics on ${engine.httpUrl}; ${flags.rate} batches/s, block size ${flags.blockSize}, seed ${flags.seed}. Ctrl-C stops.\n` +
      `sim-engine: the relay config's worker entry for this engine (stdout):\n`,
  );
  io.stdout.write(stringify([simWorkerConfig(engine, flags)]));
  await stopped;
  await engine.stop();
  io.stderr.write('sim-engine: stopped\n');
  return EXIT.ok;
}
