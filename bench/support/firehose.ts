// ZMQ publishers standing in for engines, a firehose that sends their messages as fast as the sockets
// take them, and the ingest rate of a relay process it feeds (#8's ingest-scale measure).
import { setImmediate as nextTurn } from 'timers/promises';
import { Publisher } from 'zeromq';
import { encodeSequence } from '../../src/ingest/frames';
import { BLOCK_SIZE, BLOCKS_PER_EVENT } from './vllm-batches';
import { metricSum, scrape, startRelayProcess } from './relay-process';

const SEND_HWM = 10_000;
/** Sends between two yields of a firehose loop to the event loop. */
const YIELD_EVERY = 64n;
/** Distinct messages per source a firehose sends round-robin (hashes repeat; the relay's lineage absorbs it). */
export const FIREHOSE_MESSAGES = 256;
export const TOPIC = Buffer.from('kv');

export async function publishers(n: number): Promise<Publisher[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const p = new Publisher({ sendHighWaterMark: SEND_HWM, linger: 0 });
      await p.bind('tcp://127.0.0.1:*');
      return p;
    }),
  );
}

/** Publishers sending their sources' messages round-robin as fast as the sockets take them, until stopped. */
export class Firehose {
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
    for (let seq = 0n; this.running; seq++) {
      await socket.send([TOPIC, encodeSequence(seq), payloads[Number(seq % BigInt(payloads.length))]]);
      // A send the socket takes at once resolves as a microtask: while a relay fast enough to keep
      // the PUB queue short reads, the bench's timers and scrapes would not run (20 s windows seen).
      if (seq % YIELD_EVERY === 0n) await nextTurn();
    }
  }
}

export interface PoolSpec {
  /** Model name, which identifies the pool in the catalog. */
  model: string;
  /** The KV event publishers of its workers, one worker each. */
  endpoints: string[];
}

/** A relay config with one pool per spec, each worker dialing its publisher. */
export function relayConfig(pools: PoolSpec[], extra: object = {}): object {
  let nextWorker = 1;
  return {
    dcId: 'dc-bench',
    bind: '127.0.0.1:0',
    metricsBind: '127.0.0.1:0',
    expectedUniqueBlocks: 1 << 22,
    ...extra,
    endpoints: pools.map((pool) => ({
      namespace: 'bench',
      component: pool.model,
      endpoint: 'generate',
      model: { name: pool.model, kvBlockSize: BLOCK_SIZE },
      workers: pool.endpoints.map((endpoint) => ({ id: nextWorker++, kvEvents: { endpoint } })),
    })),
  };
}

export interface IngestRate {
  /** Blocks the relay's ingest took (kv_dc_relay_ingest_blocks_total). */
  blocksPerSecond: number;
  /**
   * Blocks its pool applied: events applied × 32 blocks (every event of these batches has 32). Below
   * blocksPerSecond when batches were dropped on a full pool mailbox (their sources reset).
   */
  appliedBlocksPerSecond: number;
  mailboxOverflows: number;
  /** Sequence gaps the relay saw: messages PUB dropped because the relay did not take them in time. */
  gaps: number;
  cpuMsPerMBlocks: number | undefined;
}

/** Blocks/s a relay process ingests from the publishers sending `payloads` as fast as they can. */
export async function relayIngestRate(
  pubs: Publisher[],
  payloads: Buffer[][],
  window: { warmupMs: number; measureMs: number },
  /** Extra top-level config of the relay (e.g. `limits`). */
  extra: object = {},
): Promise<IngestRate> {
  const relay = await startRelayProcess(relayConfig([{ model: 'bench', endpoints: pubs.map((p) => p.lastEndpoint!) }], extra));
  const firehose = new Firehose(pubs, payloads);
  const totals = async (): Promise<{ blocks: number; gaps: number; applied: number; overflows: number }> => {
    const text = await scrape(relay.metricsAddress).catch((err: Error) => {
      throw new Error(`scraping the relay failed (${err.message})\n${relay.lastLog()}`);
    });
    return {
      blocks: metricSum(text, 'kv_dc_relay_ingest_blocks_total'),
      gaps: metricSum(text, 'kv_dc_relay_ingest_gaps_total'),
      applied: metricSum(text, 'kv_dc_relay_pool_events_applied_total') * BLOCKS_PER_EVENT,
      overflows: metricSum(text, 'kv_dc_relay_pool_mailbox_overflows_total'),
    };
  };
  try {
    firehose.start();
    await new Promise((r) => setTimeout(r, window.warmupMs));
    const before = await totals();
    const cpu0 = relay.cpuMs();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, window.measureMs));
    const after = await totals();
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = relay.cpuMs();
    const blocks = after.blocks - before.blocks;
    return {
      blocksPerSecond: blocks / seconds,
      appliedBlocksPerSecond: (after.applied - before.applied) / seconds,
      mailboxOverflows: after.overflows - before.overflows,
      gaps: after.gaps - before.gaps,
      cpuMsPerMBlocks: cpu0 === undefined || cpu1 === undefined || blocks === 0 ? undefined : ((cpu1 - cpu0) / blocks) * 1e6,
    };
  } finally {
    await firehose.stop();
    await relay.stop();
  }
}
