// A generation's end with a reservation (limits.reservePoolBlocks): how long freeing its populated
// tables holds the thread that ends it (the event loop, or an ingest thread and its other pools),
// with PoolFilterState.release() (the state freed on the releaser's thread; what the pool actor does)
// against close() (freed on the calling thread). A pool reserving POOL_RELEASE_BLOCKS blocks over
// four named sources is made and populated, then freed one way or the other, alternating, ROUNDS
// rounds each; the release's time until its promise settled (the tables unmapped) is in the note.
// The munmap's cost depends on the pages the kernel gave: 1-2 ms for ~200 MiB in transparent huge
// pages on the project's VM, 117-190 ms in small pages (run the bench under a process with THP
// disabled, prctl(PR_SET_THP_DISABLE), to see the latter).
import { ckfBucketCount, PoolFilterState } from '../src/native';
import type { BenchResult } from './support/result';
import { median } from './support/timing';

const BLOCKS = Number(process.env.POOL_RELEASE_BLOCKS ?? 4_194_304);
const ROUNDS = Number(process.env.POOL_RELEASE_ROUNDS ?? 6);

const msSince = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

async function populated(): Promise<PoolFilterState> {
  const sources = [1n, 2n, 3n, 4n].map((workerId) => ({ workerId, dpRank: 0 }));
  const pool = new PoolFilterState({ bucketCount: ckfBucketCount(BLOCKS), reserve: { blocks: BLOCKS, perSource: BLOCKS / 4, sources } });
  while (!pool.tablesPopulated()) await new Promise((resolve) => setTimeout(resolve, 5));
  return pool;
}

export async function run(): Promise<BenchResult[]> {
  // The process's first release starts the releaser's thread: not a round's cost.
  await new PoolFilterState({ bucketCount: 1024 }).release();
  const closeMs: number[] = [];
  const releaseMs: number[] = [];
  const settledMs: number[] = [];
  let mib = 0;
  for (let r = 0; r < 2 * ROUNDS; r++) {
    const pool = await populated();
    mib = pool.stateBytes() / 2 ** 20;
    const start = process.hrtime.bigint();
    if ((r + Math.floor(r / 2)) % 2 === 0) {
      pool.close();
      closeMs.push(msSince(start));
    } else {
      const released = pool.release();
      releaseMs.push(msSince(start));
      await released;
      settledMs.push(msSince(start));
    }
  }
  const list = (values: number[]): string => values.map((x) => x.toFixed(2)).join(', ');
  return [
    {
      name: `thread held while a populated reservation is freed, release() (${BLOCKS.toLocaleString('en-US')} blocks, ${mib.toFixed(0)} MiB, ${ROUNDS} rounds)`,
      value: median(releaseMs),
      unit: 'ms',
      baseline: { name: 'close() on the calling thread', value: median(closeMs) },
      ratio: median(releaseMs) / median(closeMs),
      note: `medians; per round: ${list(releaseMs)} against ${list(closeMs)}; release settled after ${list(settledMs)} ms`,
    },
  ];
}
