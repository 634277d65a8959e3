// Small timing helpers shared by the benchmarks.
import { performance } from 'perf_hooks';

export async function timeMs(work: () => unknown): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Bytes per millisecond → GB/s (10^9 bytes per second). */
export function gbPerSecond(bytes: number, ms: number): number {
  return bytes / ms / 1e6;
}

export function round(value: number, digits = 3): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
