// Ingest at datacenter scale (#8): a `kv-dc-relay serve` process dials 1 and 8 ZMQ publishers that
// send realistic vLLM batches (map-encoded events, 16 events × 32 blocks of 16 tokens, 20 %
// removals) as fast as they can for a fixed time. Reported: blocks/s the relay ingested (its own
// kv_dc_relay_ingest_blocks_total over the window) and relay CPU per block (/proc), against a bare
// zeromq.js SUB in a process of its own receiving the same frames from the same publishers (blocks/s).
// PUB drops what a slow subscriber cannot take, so each side is measured by what it received.
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Publisher } from 'zeromq';
import { encodeSequence } from '../src/ingest/frames';
import { encodeBatch, type SimEvent } from '../src/sim';
import { Rng } from '../src/sim/rng';
import type { BenchResult } from './support/result';
import { processCpuMs } from './support/process';

const SOURCES = [1, 8];
const BLOCK_SIZE = 16;
const EVENTS_PER_MESSAGE = 16;
const BLOCKS_PER_EVENT = 32;
/** Distinct messages per source, sent round-robin (hashes repeat; the relay's lineage absorbs it). */
const MESSAGES = 256;
const WARMUP_MS = 1_000;
const MEASURE_MS = Number(process.env.INGEST_SCALE_MS ?? 3_000);
/** Extra node flags for the relay process, space-separated (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p` to profile it). */
const RELAY_NODE_ARGS = (process.env.INGEST_SCALE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const SEND_HWM = 10_000;

/** A source's messages: stores of fresh chains, 20 % of the events removals of an earlier store. */
function messages(seed: number): { payloads: Buffer[]; blocksPerMessage: number } {
  const rng = new Rng(seed);
  const next = () => rng.int(2 ** 32);
  const hash = () => (BigInt(next()) << 32n) | BigInt(next());
  const payloads: Buffer[] = [];
  const stored: bigint[][] = [];
  for (let m = 0; m < MESSAGES; m++) {
    const events: SimEvent[] = [];
    for (let e = 0; e < EVENTS_PER_MESSAGE; e++) {
      if (stored.length > 0 && next() % 5 === 0) {
        events.push({ type: 'BlockRemoved', blockHashes: stored.shift()! });
        continue;
      }
      const blockHashes = Array.from({ length: BLOCKS_PER_EVENT }, hash);
      stored.push(blockHashes);
      const tokenIds = Uint32Array.from({ length: BLOCKS_PER_EVENT * BLOCK_SIZE }, () => next() % 152_064);
      events.push({ type: 'BlockStored', blockHashes, parentBlockHash: null, tokenIds, blockSize: BLOCK_SIZE });
    }
    payloads.push(encodeBatch(1_700_000_000 + m, events, 0, { events: 'map' }));
  }
  return { payloads, blocksPerMessage: EVENTS_PER_MESSAGE * BLOCKS_PER_EVENT };
}

/** Publishers sending their sources' messages as fast as the sockets take them, until stopped. */
class Firehose {
  private running = true;
  private readonly loops: Promise<void>[] = [];

  constructor(
    private readonly sockets: Publisher[],
    private readonly payloads: Buffer[][],
  ) {}

  start(): void {
    this.sockets.forEach((socket, s) => this.loops.push(this.loop(socket, this.payloads[s])));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(socket: Publisher, payloads: Buffer[]): Promise<void> {
    const topic = Buffer.from('kv');
    for (let seq = 0n; this.running; seq++) await socket.send([topic, encodeSequence(seq), payloads[Number(seq % BigInt(payloads.length))]]);
  }
}

async function publishers(n: number): Promise<Publisher[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const p = new Publisher({ sendHighWaterMark: SEND_HWM, linger: 0 });
      await p.bind('tcp://127.0.0.1:*');
      return p;
    }),
  );
}

function waitForLine(child: ChildProcess, match: (line: string) => string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stderr!.on('data', (b: Buffer) => {
      buffered += b.toString();
      for (const line of buffered.split('\n')) {
        const found = match(line);
        if (found !== undefined) return resolve(found);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${buffered}`)));
  });
}

/** The sum over sources of one of the relay's ingest counters. */
async function ingestTotal(metricsAddress: string, counter: string): Promise<number> {
  const text = await (await fetch(`http://${metricsAddress}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(new RegExp(`^kv_dc_relay_ingest_${counter}_total\\{[^}]*\\} (\\S+)$`, 'gm'))) total += Number(m[1]);
  return total;
}

/** blocks/s and CPU ms per million blocks of a relay process ingesting from the publishers. */
async function throughRelay(pubs: Publisher[], payloads: Buffer[][]): Promise<{ blocksPerSecond: number; gaps: number; cpuMsPerMBlocks: number | undefined }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-bench-ingest-'));
  const configFile = path.join(dir, 'relay.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      dcId: 'dc-bench',
      bind: '127.0.0.1:0',
      metricsBind: '127.0.0.1:0',
      expectedUniqueBlocks: 1 << 22,
      endpoints: [
        {
          namespace: 'bench',
          component: 'backend',
          endpoint: 'generate',
          model: { name: 'bench', kvBlockSize: BLOCK_SIZE },
          workers: pubs.map((p, i) => ({ id: i + 1, kvEvents: { endpoint: p.lastEndpoint } })),
        },
      ],
    }),
  );
  const child = spawn(process.execPath, [...RELAY_NODE_ARGS, path.join(__dirname, '..', 'src', 'cli', 'main.js'), 'serve', '--config', configFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const firehose = new Firehose(pubs, payloads);
  try {
    const metrics = await waitForLine(child, (l) => (l.includes('"msg":"metrics listening"') ? (JSON.parse(l) as { address: string }).address : undefined));
    firehose.start();
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    const blocks0 = await ingestTotal(metrics, 'blocks');
    const gaps0 = await ingestTotal(metrics, 'gaps');
    const cpu0 = processCpuMs(child.pid);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, MEASURE_MS));
    const blocks = (await ingestTotal(metrics, 'blocks')) - blocks0;
    const gaps = (await ingestTotal(metrics, 'gaps')) - gaps0;
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = processCpuMs(child.pid);
    return { blocksPerSecond: blocks / seconds, gaps, cpuMsPerMBlocks: cpu0 === undefined || cpu1 === undefined || blocks === 0 ? undefined : ((cpu1 - cpu0) / blocks) * 1e6 };
  } finally {
    await firehose.stop();
    child.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Bare zeromq.js SUBs (one per publisher) in a child process: messages/s received, as blocks/s. */
async function bareSubscriber(pubs: Publisher[], payloads: Buffer[][], blocksPerMessage: number): Promise<number> {
  const script = `
    const { Subscriber } = require(${JSON.stringify(require.resolve('zeromq'))});
    let n = 0;
    for (const endpoint of process.argv.slice(1)) {
      const s = new Subscriber({ receiveHighWaterMark: 100000 });
      s.subscribe('');
      s.connect(endpoint);
      (async () => { for (;;) { await s.receive(); n++; } })();
    }
    process.stdin.on('data', () => process.stderr.write(JSON.stringify({ n }) + '\\n'));
    process.stderr.write('{"ready":true}\\n');`;
  const child = spawn(process.execPath, ['-e', script, ...pubs.map((p) => p.lastEndpoint!)], { stdio: ['pipe', 'ignore', 'pipe'] });
  const firehose = new Firehose(pubs, payloads);
  const count = (): Promise<number> => {
    const line = waitForLine(child, (l) => (l.startsWith('{"n"') ? l : undefined));
    child.stdin!.write('\n');
    return line.then((l) => (JSON.parse(l) as { n: number }).n);
  };
  try {
    await waitForLine(child, (l) => (l.includes('ready') ? l : undefined));
    firehose.start();
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    child.stderr!.removeAllListeners('data');
    const n0 = await count();
    child.stderr!.removeAllListeners('data');
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, MEASURE_MS));
    const n1 = await count();
    return ((n1 - n0) * blocksPerMessage) / ((performance.now() - t0) / 1000);
  } finally {
    await firehose.stop();
    child.kill('SIGTERM');
  }
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const n of SOURCES) {
    const sources = Array.from({ length: n }, (_, s) => messages(0x5eed + s));
    const payloads = sources.map((s) => s.payloads);
    const { blocksPerMessage } = sources[0];
    const pubs = await publishers(n);
    try {
      const bare = await bareSubscriber(pubs, payloads, blocksPerMessage);
      const relay = await throughRelay(pubs, payloads);
      const kib = (payloads[0].reduce((a, p) => a + p.length, 0) / payloads[0].length / 1024).toFixed(1);
      results.push({
        name: `blocks/s ingested by one relay process, ${n} source(s), vLLM map batches ${EVENTS_PER_MESSAGE} events × ${BLOCKS_PER_EVENT} blocks`,
        value: relay.blocksPerSecond,
        unit: 'blocks/s',
        baseline: { name: 'bare zeromq.js SUB process, same frames', value: bare },
        ratio: relay.blocksPerSecond / bare,
        note: `bs ${BLOCK_SIZE}, 20 % removals, ${kib} KiB/message; goal >= 2 M blocks/s; relay CPU ${relay.cpuMsPerMBlocks?.toFixed(0) ?? '?'} ms per M blocks; ${relay.gaps} gaps (PUB drops) in the window; ${MEASURE_MS / 1000} s window after ${WARMUP_MS / 1000} s warm-up`,
      });
    } finally {
      for (const p of pubs) p.close();
    }
  }
  return results;
}
