// The first event of each source of a pool with reserved tables (limits.reservePoolBlocks): how long
// the call that applies it holds its thread, when the sources' lineage tables are made at that first
// event (the reservation names no source) against made with the owner table at construction (the
// relay's pools name their endpoint's sources). A pool reserving RESERVE_FIRST_BLOCKS blocks over
// each source count is constructed and, at once (the populating thread then faults its tables in),
// each source stores one block, then each stores a second one (no table is made then: the control
// for what the first-touch page faults of tables not populated yet cost either way). The constructor
// and every store are timed on the calling thread. The two ways alternate, ROUNDS rounds each, every
// pool closed before the next.
import { ckfBucketCount, PoolFilterState, type PoolReservation } from '../src/native';
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

export async function run(): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
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
