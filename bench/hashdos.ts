// HashDoS on the pool's lineage tables (issue 26 item 3; goal: crafted ids within 2x of random ones).
// A lineage table (native/core/bucket_map.h, 8-byte values) of 1 M engine ids takes 400 batches of 24
// ids, each batch aimed at one bucket pair of the table as the public code and seed address it (the
// attack: before the per-process secret, ~17 such ids filled a pair and the stash, and each batch
// rebuilt the table synchronously), against as many random ids into a table of the same fill, in the
// same run.
import { attackBucketMap } from '../test/support/native-testing';
import type { BenchResult } from './support/result';
import { median, round } from './support/timing';

const FILL = 1_000_000;
const BATCHES = 400;
const PER_BATCH = 24;
const ROUNDS = 5;

export async function run(): Promise<BenchResult[]> {
  const runs = Array.from({ length: ROUNDS }, () => attackBucketMap(FILL, BATCHES, PER_BATCH));
  const crafted = median(runs.map((r) => r.craftedNs)) / (BATCHES * PER_BATCH);
  const random = median(runs.map((r) => r.randomNs)) / (BATCHES * PER_BATCH);
  const moves = runs.reduce((n, r) => n + r.reseeds + r.rebuilds, 0);
  return [
    {
      name: `lineage-table insert of ids crafted against the public addressing (${BATCHES} batches of ${PER_BATCH} aimed at one bucket pair each, table of ${FILL} ids)`,
      value: round(crafted, 1),
      unit: 'ns/id',
      baseline: { name: 'random ids into a table of the same fill', value: round(random, 1) },
      ratio: round(crafted / random, 2),
      note: `goal <= 2; median of ${ROUNDS} runs; moves to another seed caused by crafted ids: ${moves}`,
    },
  ];
}
