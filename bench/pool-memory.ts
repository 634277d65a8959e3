// Producer memory per tracked block (#8 item 4), and the stalls of its growth: a pool state filled to
// 10 M stored blocks over 64 sources (every canonical hash distinct: one owner entry per block, the
// worst case) through the native batch apply in a fresh process, in slices of 4096 blocks (the pool
// actor's synchronous apply bound), each timed with its drain. Memory is reported as bytes per block
// from the process RSS growth and from the state's own accounting (filter words + owner table +
// lineage tables), at rest (no table draining into its successor or with one prepared, and the
// drained tables' pages kept for the next successor unmapped once their hold ended) and at its
// peak over the fill, against the RSS growth of a plain array of the same input words (ext id +
// tokens hash, 16 B per block) measured in the same call. Goal: <= 48 B per block. The stall is the
// slowest slice against the median slice of the same fill (goal: a few ms, the event loop's budget).
import { benchPoolMemoryNative } from '../test/support/native-testing';
import type { BenchResult } from './support/result';

const SOURCES = 64;
const BLOCKS = Number(process.env.POOL_MEMORY_BLOCKS ?? 10_000_000);

export async function run(): Promise<BenchResult[]> {
  const r = benchPoolMemoryNative(SOURCES, BLOCKS);
  const perBlock = (bytes: number): number => bytes / r.blocks;
  const baseline = { name: 'plain array of the input words (ext id + tokens hash)', value: perBlock(r.baselineRssBytes) };
  const shape = `${r.blocks.toLocaleString('en-US')} blocks over ${SOURCES} sources, ${r.bucketCount} buckets (load ${(r.residentCount / (4 * r.bucketCount)).toFixed(2)})`;
  const memory = (name: string, bytes: number, note: string): BenchResult => ({
    name: `${name}, ${shape}`,
    value: perBlock(bytes),
    unit: 'B/block',
    baseline,
    ratio: perBlock(bytes) / baseline.value,
    note,
  });
  return [
    memory('producer RSS per tracked block at rest', r.restRssBytes, `goal <= 48; lineage entries ${r.lineageEntries}, owned hashes ${r.ownedHashes}; at the end of the fill, drains, prepared tables and ${(r.keptBytes / 2 ** 20).toFixed(0)} MiB of kept pages included: ${perBlock(r.rssBytes).toFixed(2)} (at rest ${(r.keptForMs / 1000).toFixed(1)} s later)`),
    memory("producer state's own accounting per tracked block at rest", r.restAccountedBytes, `filter words + owner table + lineage tables + publication window; at the end of the fill: ${perBlock(r.accountedBytes).toFixed(2)}`),
    memory('producer RSS per tracked block, peak over the fill', r.peakRssBytes, 'sampled after each 4096-block slice: tables draining into their successors hold both'),
    memory("producer state's own accounting per tracked block, peak over the fill", r.peakAccountedBytes, 'after each 4096-block slice'),
    {
      name: `slowest 4096-block apply (+ drain) while growing to ${shape}`,
      value: r.maxSliceMs,
      unit: 'ms',
      baseline: { name: 'median 4096-block apply of the same fill', value: r.medianSliceMs },
      ratio: r.maxSliceMs / r.medianSliceMs,
      note: `at ${(r.maxSliceAtBlocks / 1e6).toFixed(2)} M blocks; p99 ${r.p99SliceMs.toFixed(2)} ms, p99.9 ${r.p999SliceMs.toFixed(2)} ms over ${r.slices} slices, ${(r.totalMs / 1000).toFixed(2)} s in all`,
    },
  ];
}
