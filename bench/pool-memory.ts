// Producer memory per tracked block (#8 item 4): a pool state holding 10 M stored blocks over 64
// sources (every canonical hash distinct: one owner entry per block, the worst case), filled through
// the native batch apply in a fresh process. Reported as bytes per block from the process RSS growth
// and from the state's own accounting (filter words + owner table + lineage tables), against the RSS
// growth of a plain array of the same input words (ext id + tokens hash, 16 B per block) measured in
// the same call. Goal: <= 48 B per block.
import { benchPoolMemoryNative } from '../test/support/native-testing';
import type { BenchResult } from './support/result';

const SOURCES = 64;
const BLOCKS = Number(process.env.POOL_MEMORY_BLOCKS ?? 10_000_000);

export async function run(): Promise<BenchResult[]> {
  const r = benchPoolMemoryNative(SOURCES, BLOCKS);
  const perBlock = r.rssBytes / r.blocks;
  const accounted = r.accountedBytes / r.blocks;
  const baseline = { name: 'plain array of the input words (ext id + tokens hash)', value: r.baselineRssBytes / r.blocks };
  const shape = `${r.blocks.toLocaleString('en-US')} blocks over ${SOURCES} sources, ${r.bucketCount} buckets (load ${(r.residentCount / (4 * r.bucketCount)).toFixed(2)})`;
  return [
    {
      name: `producer RSS per tracked block, ${shape}`,
      value: perBlock,
      unit: 'B/block',
      baseline,
      ratio: perBlock / baseline.value,
      note: `goal <= 48; lineage entries ${r.lineageEntries}, owned hashes ${r.ownedHashes}`,
    },
    {
      name: `producer state's own accounting per tracked block, ${shape}`,
      value: accounted,
      unit: 'B/block',
      baseline,
      ratio: accounted / baseline.value,
      note: 'filter words + owner table + lineage tables + publication window',
    },
  ];
}
