// Snapshot encoding: a full 2^24-bucket table (128 MiB of bucket words) into 32 CBI1 chunks,
// checksums included, against a copy of the same 128 MiB measured in the same run; and the
// longest event-loop stall while the worker-thread encoder runs.
import { encodeSnapshotAsync, encodeSnapshotChunk, snapshotChunkCount, SnapshotAssembly, CBI1 } from '../src/native';
import { performance } from 'perf_hooks';
import type { BenchResult } from './support/result';
import { fullGc } from './support/gc';
import { withStallMonitor } from './support/stall';
import { gbPerSecond, median, round, timeMs } from './support/timing';

const SAMPLES = 7;
const FORMAT = { seed: 0x5deece66d1b54a33n, bucketCount: CBI1.maxBucketCount };

function table(): BigUint64Array {
  const words = new BigUint64Array(FORMAT.bucketCount);
  const halves = new Uint32Array(words.buffer);
  for (let i = 0; i < halves.length; i++) halves[i] = Math.imul(i, 0x9e3779b1) >>> 0;
  return words;
}

function encodeEveryChunk(words: BigUint64Array): Buffer[] {
  return Array.from({ length: snapshotChunkCount(FORMAT) }, (_, i) => encodeSnapshotChunk(FORMAT, 1n, 2n, words, i));
}

function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}

export async function run(): Promise<BenchResult[]> {
  const words = table();
  const source = Buffer.from(words.buffer);
  const bytes = source.length;

  // Cold: the first encode in this process faults in fresh output pages; the matching baseline
  // copies into a fresh Buffer.
  await fullGc();
  const coldEncodeMs = await timeMs(() => encodeSnapshotAsync(FORMAT, 1n, 1n, words));
  const coldCopyMs = await timeMs(() => source.copy(Buffer.allocUnsafeSlow(bytes)));

  // Warm: encoded regions return to the native pool once collected, like a relay re-encoding a
  // pool's snapshot; the matching baseline copies into an already-touched destination.
  const destination = Buffer.alloc(bytes);
  const copyMs: number[] = [];
  const syncMs: number[] = [];
  const asyncMs: number[] = [];
  // Event-loop busy time while an async encode runs (argument checks, queueing, wrapping the
  // result): the loop's own cost, which unlike the stall monitor does not count CPU contention.
  const loopBusyMs: number[] = [];
  const stallMs: number[] = [];
  // Process CPU time (all threads: the encode runs on a libuv worker) of each copy and encode.
  const copyCpuMs: number[] = [];
  const asyncCpuMs: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    await fullGc();
    const copyCpu = process.cpuUsage();
    copyMs.push(await timeMs(() => source.copy(destination)));
    copyCpuMs.push(cpuMs(process.cpuUsage(copyCpu)));
    await fullGc();
    const before = performance.eventLoopUtilization();
    const encodeCpu = process.cpuUsage();
    asyncMs.push(await timeMs(() => encodeSnapshotAsync(FORMAT, 1n, 3n, words)));
    asyncCpuMs.push(cpuMs(process.cpuUsage(encodeCpu)));
    loopBusyMs.push(performance.eventLoopUtilization(before).active);
  }
  // Apart from the async samples: its 32 fresh 4 MiB Buffers per sample are 128 MiB of external
  // memory, and the collection they provoke must not land in an async encode's loop-busy window.
  for (let i = 0; i < SAMPLES; i++) {
    await fullGc();
    // The whole table in one synchronous call is over nativeLimits.maxSyncFilterWords: chunk by chunk.
    syncMs.push(await timeMs(() => encodeEveryChunk(words)));
  }
  // The consumer side: decode (checksums included) and assemble all 32 chunks into sparse images.
  const chunks = await encodeSnapshotAsync(FORMAT, 1n, 5n, words);
  const assembleMs: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    await fullGc();
    const assembly = new SnapshotAssembly(FORMAT);
    assembleMs.push(await timeMs(() => chunks.forEach((chunk) => assembly.absorb(chunk))));
  }
  // Stalls are measured in separate runs: the monitor keeps the loop spinning, which competes
  // with the worker for the CPU and would distort the throughput samples.
  // The same monitor over an idle loop for as long as an encode takes: the machine's own noise.
  const idleStallMs: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    await fullGc();
    const { stall } = await withStallMonitor(() => encodeSnapshotAsync(FORMAT, 1n, 4n, words));
    stallMs.push(stall.maxStallMs);
    await fullGc();
    const idle = await withStallMonitor(() => new Promise((resolve) => setTimeout(resolve, median(asyncMs))));
    idleStallMs.push(idle.stall.maxStallMs);
  }

  const copy = gbPerSecond(bytes, median(copyMs));
  const coldCopy = gbPerSecond(bytes, coldCopyMs);
  const row = (name: string, ms: number, baseline: { name: string; value: number }, note: string): BenchResult => {
    const value = gbPerSecond(bytes, ms);
    return { name, value: round(value), unit: 'GB/s', baseline: { ...baseline, value: round(baseline.value) }, ratio: round(value / baseline.value), note };
  };
  const warmBaseline = { name: 'memcpy 128 MiB (Buffer.copy, touched destination)', value: copy };
  return [
    row('cbi1 snapshot encode 2^24 buckets, worker thread', median(asyncMs), warmBaseline, `median of ${SAMPLES}, 32 chunks incl. checksums, recycled output memory`),
    {
      name: 'cbi1 snapshot encode 2^24 buckets, worker thread: process CPU per GB',
      value: round(median(asyncCpuMs) / (bytes / 1e9), 2),
      unit: 'ms',
      baseline: { name: 'memcpy of the same bytes', value: round(median(copyCpuMs) / (bytes / 1e9), 2) },
      ratio: round(median(asyncCpuMs) / median(copyCpuMs), 3),
      note: `median of ${SAMPLES}, user + system, all threads`,
    },
    row('cbi1 snapshot encode 2^24 buckets, calling thread', median(syncMs), warmBaseline, `median of ${SAMPLES}, encodeSnapshotChunk per chunk`),
    row('cbi1 snapshot decode + assembly 2^24 buckets', median(assembleMs), warmBaseline, `median of ${SAMPLES}, every word nonzero (2^24 images)`),
    row(
      'cbi1 snapshot encode 2^24 buckets, first (fresh memory)',
      coldEncodeMs,
      { name: 'copy 128 MiB into a fresh Buffer', value: coldCopy },
      'one sample each; both fault in new pages',
    ),
    {
      name: 'event-loop busy time during async 2^24 encode',
      value: round(median(loopBusyMs), 3),
      unit: 'ms',
      note: `median of ${SAMPLES} (max ${round(Math.max(...loopBusyMs), 3)} ms); eventLoopUtilization().active over the whole encode`,
    },
    {
      name: 'event-loop max stall during async 2^24 encode',
      value: round(Math.max(...stallMs), 2),
      unit: 'ms',
      baseline: { name: 'idle loop, same duration', value: round(Math.max(...idleStallMs), 2) },
      note: `max over ${SAMPLES} encodes (median ${round(median(stallMs), 2)} ms, idle median ${round(median(idleStallMs), 2)} ms); setImmediate gap`,
    },
  ];
}
