// Ingest at datacenter scale (#8): a `kv-dc-relay serve` process dials 1, 8 and 64 ZMQ publishers that
// send realistic vLLM batches (map-encoded events, 16 events × 32 blocks of 16 tokens, 20 %
// removals) as fast as they can for a fixed time. Reported: blocks/s the relay ingested (its own
// kv_dc_relay_ingest_blocks_total over the window) and relay CPU per block (/proc), against a bare
// zeromq.js SUB in a process of its own receiving the same frames from the same publishers (blocks/s).
// Two workloads: the firehose's 256 messages per source round robin (after the first pass its stores
// are of blocks the source already holds, so the pool does little per block), and fresh messages,
// every chain new to the pool (lineage, owner and filter inserts into growing tables: what engines
// storing new prompts cost, and how the issue measured the relay from outside), and the same fresh
// stores on a pool at equilibrium (each source's removals evict as many blocks as it stores, blocks a
// pre-fill stored before the window: engines whose KV caches are full, the pool keeping its size).
import type { BenchResult } from './support/result';
import { bareSubscriberRate, equilibriumIngestRate, FIREHOSE_MESSAGES, freshIngestRate, prefillBatches, publishers, relayIngestRate, type IngestRate } from './support/firehose';
import { BLOCK_SIZE, BLOCKS_PER_EVENT, BLOCKS_PER_MESSAGE, EVENTS_PER_MESSAGE, REMOVALS, vllmBatches } from './support/vllm-batches';

/** 64: the many engine ranks of a large DC's relay, where per-source costs show (INGEST_SCALE_SOURCES=1,8 picks some). */
const SOURCES = (process.env.INGEST_SCALE_SOURCES ?? '1,8,64').split(',').map(Number);
/** INGEST_SCALE_EQUILIBRIUM=0 skips the equilibrium rows (their pre-fill takes most of a run). */
const EQUILIBRIUM = process.env.INGEST_SCALE_EQUILIBRIUM !== '0';
const WARMUP_MS = 1_000;
const MEASURE_MS = Number(process.env.INGEST_SCALE_MS ?? 3_000);
/** Fresh messages are built before the run (~1 ms each), so their window is shorter. */
const FRESH_WINDOW = { warmupMs: 500, measureMs: Number(process.env.INGEST_SCALE_FRESH_MS ?? 2_000) };
/** The relay's limits.ingestThreads (0 = ingest on its main thread); unset = the relay's default (one per core). */
const INGEST_THREADS = process.env.INGEST_SCALE_THREADS === undefined ? undefined : Number(process.env.INGEST_SCALE_THREADS);
/**
 * The relay's limits.reservePoolBlocks (INGEST_SCALE_RESERVE=4194304: the pool's tables sized up front
 * for what a fresh run stores, so they do not grow); unset = 0, the tables grow as they fill.
 */
const RESERVE_POOL_BLOCKS = Number(process.env.INGEST_SCALE_RESERVE ?? 0);
/** Blocks the pool holds in the equilibrium runs (well past the caches: ~200 MB of pool state). */
const EQUILIBRIUM_POOL_BLOCKS = Number(process.env.INGEST_SCALE_POOL_BLOCKS ?? 4_194_304);

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  // The fresh supplies are sized from the fastest repeating rate so far: 64 sources' repeating firehose
  // cycles 64 × 256 messages of distinct blocks, a working set that holds its own rate down, and a
  // supply sized from it ran out within the window (the equilibrium row then measured the supply).
  let bound = 0;
  for (const n of SOURCES) {
    const payloads = Array.from({ length: n }, (_, s) => vllmBatches(0x5eed + s, FIREHOSE_MESSAGES).payloads);
    const pubs = await publishers(n);
    try {
      const window = { warmupMs: WARMUP_MS, measureMs: MEASURE_MS };
      const bare = (await bareSubscriberRate(pubs, payloads, window)).messagesPerSecond * BLOCKS_PER_MESSAGE;
      const limits = { ...(INGEST_THREADS === undefined ? {} : { ingestThreads: INGEST_THREADS }), ...(RESERVE_POOL_BLOCKS > 0 ? { reservePoolBlocks: RESERVE_POOL_BLOCKS } : {}) };
      const extra = Object.keys(limits).length === 0 ? {} : { limits };
      const relay = await relayIngestRate(pubs, payloads, window, { extra, blocksPerEvent: BLOCKS_PER_EVENT });
      const row = (workload: string, r: IngestRate & { exhausted?: boolean }, windowNote: string, removals = REMOVALS.growing): BenchResult => ({
        name: `blocks/s ingested by one relay process, ${n} source(s), vLLM map batches ${EVENTS_PER_MESSAGE} events × ${BLOCKS_PER_EVENT} blocks, ${workload}`,
        value: r.blocksPerSecond,
        unit: 'blocks/s',
        baseline: { name: 'bare zeromq.js SUB process, same frames', value: bare },
        ratio: r.blocksPerSecond / bare,
        note: `bs ${BLOCK_SIZE}, ${removals}, ${(r.bytesPerMessage / 1024).toFixed(1)} KiB/message; ingest threads ${INGEST_THREADS ?? 'default (one per core)'}; pool tables reserved for ${RESERVE_POOL_BLOCKS} blocks; goal >= 2 M blocks/s; relay CPU ${r.cpuMsPerMBlocks?.toFixed(0) ?? '?'} ms per M blocks; pool applied ${(r.appliedBlocksPerSecond / 1e6).toFixed(2)} M blocks/s (${r.mailboxOverflows} batches dropped on a full pool mailbox); ${r.gaps} gaps (PUB drops) in the window; ${windowNote}${r.exhausted ? '; the supply ran out before the window ended: a lower bound' : ''}`,
      });
      results.push(row(`${FIREHOSE_MESSAGES} messages per source round robin`, relay, `${MEASURE_MS / 1000} s window after ${WARMUP_MS / 1000} s warm-up`));
      bound = Math.max(bound, relay.appliedBlocksPerSecond);
      const fresh = await freshIngestRate(pubs, bound, FRESH_WINDOW, { extra, blocksPerEvent: BLOCKS_PER_EVENT, blocksPerMessage: BLOCKS_PER_MESSAGE, seed: 0xf7e5 });
      results.push(row('fresh chains (every block new to the pool)', fresh, `${FRESH_WINDOW.measureMs / 1000} s window after ${FRESH_WINDOW.warmupMs / 1000} s warm-up, ${fresh.messagesPerSource} messages per source`));
      if (!EQUILIBRIUM) continue;
      const prefill = await prefillBatches(n, EQUILIBRIUM_POOL_BLOCKS, BLOCKS_PER_MESSAGE, BLOCKS_PER_EVENT, 0xf111);
      const steady = await equilibriumIngestRate(pubs, bound, FRESH_WINDOW, { extra, blocksPerEvent: BLOCKS_PER_EVENT, blocksPerMessage: BLOCKS_PER_MESSAGE, seed: 0xe9b1, prefill });
      results.push(
        row(
          'fresh chains on a pool at equilibrium (removals evict as many blocks as stores add)',
          steady,
          `${FRESH_WINDOW.measureMs / 1000} s window after ${FRESH_WINDOW.warmupMs / 1000} s warm-up, ${steady.messagesPerSource} messages per source, after a pre-fill of ${(steady.poolBlocks / 1e6).toFixed(2)} M blocks, ${(steady.trackedBlocks / 1e6).toFixed(2)} M held at the window's end`,
          REMOVALS.equilibrium,
        ),
      );
    } finally {
      for (const p of pubs) p.close();
    }
  }
  return results;
}
