// The first event of each source of a pool with reserved tables (limits.reservePoolBlocks): how long
// the call that applies it holds its thread, when the sources' lineage tables are made at that first
// event (the reservation names no source) against made with the owner table at construction (the
// relay's pools name their endpoint's sources). A pool reserving RESERVE_FIRST_BLOCKS blocks over
// each source count is constructed and, at once (the populating thread then faults its tables in),
// each source stores one block, then each stores a second one (no table is made then: the control
// for what the first-touch page faults of tables not populated yet cost either way). The constructor
// and every store are timed on the calling thread. The two ways alternate, ROUNDS rounds each, every
// pool closed before the next. Then the same through the pool actor on a thread that hosts the pool
// (limits.ingestThreads: bursts of up to 4096 blocks are applied in the received() call): each
// source's first burst (a 16-block engine message) handed to a pool actor made at once before,
// against the same bursts applied in the call on a fresh pool state (what received() did with a
// fresh reservation before its applies went to a worker until the tables were in).
import { ckfBucketCount, PoolFilterState, type PoolReservation } from '../src/native';
import { silentLogger } from '../src/log';
import { PoolActor } from '../src/producer/pool-actor';
import type { PackedEngineEvents } from '../src/ingest/types';
import { packEngineBatch } from '../test/support/packed';
import type { BenchResult } from './support/result';

const BLOCKS = Number(process.env.RESERVE_FIRST_BLOCKS ?? 4_194_304);
const SOURCE_COUNTS = (process.env.RESERVE_FIRST_SOURCES ?? '1,8').split(',').map(Number);
const ROUNDS = Number(process.env.RESERVE_FIRST_ROUNDS ?? 6);

interface Round {
  constructorMs: number;
  /** The slowest first store of the pool's sources, and all of them together. */
  worstFirstMs: number;
  firstMs: number;
  /** The same for each source's second store. */
  worstSecondMs: number;
  secondMs: number;
}

const msSince = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

function round(sources: number, named: boolean): Round {
  const list = Array.from({ length: sources }, (_, i) => ({ workerId: BigInt(i + 1), dpRank: 0 }));
  const reserve: PoolReservation = { blocks: BLOCKS, perSource: Math.ceil(BLOCKS / sources), ...(named ? { sources: list } : {}) };
  let start = process.hrtime.bigint();
  const pool = new PoolFilterState({ bucketCount: ckfBucketCount(BLOCKS), reserve });
  const constructorMs = msSince(start);
  const stores = (id: bigint): { worst: number; all: number } => {
    let worst = 0;
    let all = 0;
    for (const { workerId } of list) {
      const key = (workerId << 32n) | id;
      start = process.hrtime.bigint();
      const error = pool.store(workerId, 0, null, null, [key], [(key * 0x9e3779b97f4a7c15n) & 0xffff_ffff_ffff_ffffn]);
      const ms = msSince(start);
      if (error !== null) throw new Error(`store failed: ${error}`);
      worst = Math.max(worst, ms);
      all += ms;
    }
    return { worst, all };
  };
  const first = stores(1n);
  const second = stores(2n);
  pool.close();
  return { constructorMs, worstFirstMs: first.worst, firstMs: first.all, worstSecondMs: second.worst, secondMs: second.all };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

/** One 16-block engine message per source, as ingest hands it over. */
function firstBursts(sources: number): PackedEngineEvents[] {
  return Array.from({ length: sources }, (_, i) => {
    const ids = Array.from({ length: 16 }, (_, b) => BigInt(i * 16 + b + 1));
    const tokenIds = Uint32Array.from({ length: 64 }, (_, t) => i * 64 + t);
    return packEngineBatch(BigInt(i + 1), [{ type: 'BlockStored', blockHashes: ids, parentBlockHash: null, tokenIds, blockSize: 4 }], { kvBlockSize: 4 });
  });
}

/** The slowest call handing each source's first burst over: received() on a new actor, or the apply it made in the call before. */
async function actorRound(sources: number, viaActor: boolean): Promise<number> {
  const list = Array.from({ length: sources }, (_, i) => ({ workerId: BigInt(i + 1), dpRank: 0 }));
  const reserve: PoolReservation = { blocks: BLOCKS, perSource: Math.ceil(BLOCKS / sources), sources: list };
  const bursts = firstBursts(sources);
  const bucketCount = ckfBucketCount(BLOCKS);
  let worst = 0;
  if (viaActor) {
    const ckfFormat = { formatVersion: 1, seed: 0x5deece66d1b54a33n, bucketCount: BigInt(bucketCount), fingerprintBits: 16, slotsPerBucket: 4 };
    const producer = { producerIncarnation: 1n, layoutGeneration: 1n, ckfFormat };
    const actor = new PoolActor({ key: 'bench', producer, dcId: 1n, publicationThreshold: 1, publicationDelayMs: 1, reserve, logger: silentLogger, syncApplyBlocks: 4096 });
    for (const b of bursts) {
      const start = process.hrtime.bigint();
      actor.received(b);
      worst = Math.max(worst, msSince(start));
    }
    await actor.idle();
    await actor.retire();
    await actor.released;
  } else {
    const state = new PoolFilterState({ bucketCount, reserve });
    for (const b of bursts) {
      const start = process.hrtime.bigint();
      state.applyPacked(b.meta, b.words);
      worst = Math.max(worst, msSince(start));
    }
    state.close();
  }
  return worst;
}

export async function run(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  for (const sources of SOURCE_COUNTS) {
    const actorCalls: number[] = [];
    const inCall: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? [true, false] : [false, true];
      for (const viaActor of order) (viaActor ? actorCalls : inCall).push(await actorRound(sources, viaActor));
    }
    const shape = `${BLOCKS.toLocaleString('en-US')} blocks reserved, ${sources} named source(s), ${ROUNDS} rounds`;
    out.push({
      name: `slowest received() of a source's first burst on the thread hosting a new pool (${shape})`,
      value: Math.max(...actorCalls),
      unit: 'ms',
      baseline: { name: 'the same bursts applied in the call', value: Math.max(...inCall) },
      ratio: Math.max(...actorCalls) / Math.max(...inCall),
      note: `per round: ${actorCalls.map((x) => x.toFixed(2)).join(', ')} against ${inCall.map((x) => x.toFixed(2)).join(', ')}`,
    });
  }
  for (const sources of SOURCE_COUNTS) {
    const atFirst: Round[] = [];
    const atConstruction: Round[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternating which goes first, so that neither always follows the other's closed pool.
      if (r % 2 === 0) {
        atFirst.push(round(sources, false));
        atConstruction.push(round(sources, true));
      } else {
        atConstruction.push(round(sources, true));
        atFirst.push(round(sources, false));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const list = (rounds: Round[], key: keyof Round): string => rounds.map((x) => x[key].toFixed(2)).join(', ');
    const shape = `${BLOCKS.toLocaleString('en-US')} blocks reserved, ${sources} source(s), ${ROUNDS} rounds`;
    const worst = (rounds: Round[]): number => Math.max(...rounds.map((x) => x.worstFirstMs));
    out.push({
      name: `slowest first store of a source, tables made with the pool (${shape})`,
      value: worst(atConstruction),
      unit: 'ms',
      baseline: { name: 'tables made at each source\'s first store', value: worst(atFirst) },
      ratio: worst(atConstruction) / worst(atFirst),
      note: `per round: ${list(atConstruction, 'worstFirstMs')} against ${list(atFirst, 'worstFirstMs')}; medians ${median(atConstruction.map((x) => x.worstFirstMs)).toFixed(2)} against ${median(atFirst.map((x) => x.worstFirstMs)).toFixed(2)}`,
    });
    out.push({
      name: `all first stores of a pool's sources together, tables made with the pool (${shape})`,
      value: median(atConstruction.map((x) => x.firstMs)),
      unit: 'ms',
      baseline: { name: 'tables made at each source\'s first store', value: median(atFirst.map((x) => x.firstMs)) },
      ratio: median(atConstruction.map((x) => x.firstMs)) / median(atFirst.map((x) => x.firstMs)),
      note: `medians; per round: ${list(atConstruction, 'firstMs')} against ${list(atFirst, 'firstMs')}`,
    });
    out.push({
      name: `slowest second store of a source (no table made either way; ${shape})`,
      value: Math.max(...atConstruction.map((x) => x.worstSecondMs)),
      unit: 'ms',
      baseline: { name: 'tables made at each source\'s first store', value: Math.max(...atFirst.map((x) => x.worstSecondMs)) },
      ratio: Math.max(...atConstruction.map((x) => x.worstSecondMs)) / Math.max(...atFirst.map((x) => x.worstSecondMs)),
      note: `per round: ${list(atConstruction, 'worstSecondMs')} against ${list(atFirst, 'worstSecondMs')}`,
    });
    const slowestConstructor = (rounds: Round[]): number => Math.max(...rounds.map((x) => x.constructorMs));
    out.push({
      name: `constructor, tables made with the pool (${shape})`,
      value: slowestConstructor(atConstruction),
      unit: 'ms',
      baseline: { name: 'owner table only', value: slowestConstructor(atFirst) },
      ratio: slowestConstructor(atConstruction) / slowestConstructor(atFirst),
      note: `per round: ${list(atConstruction, 'constructorMs')} against ${list(atFirst, 'constructorMs')}`,
    });
  }
  return out;
}
