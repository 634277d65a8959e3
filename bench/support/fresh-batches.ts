// Fresh vLLM batches in quantity: every chain new to the pool, so a relay fed them does what it does
// for engines that keep storing new prompts (lineage, owner and filter inserts into growing tables),
// not the near no-ops of a firehose repeating a few hundred messages (its stores are then already
// held). One message takes ~1 ms to build in JavaScript, so they are built on worker threads, in
// chunks of their own seeds (a chunk's removals name stores of the same chunk).
import { availableParallelism } from 'os';
import * as path from 'path';
import { Worker } from 'worker_threads';
import type { Mix } from './vllm-batches';

const CHUNK_MESSAGES = 1_000;

interface Chunk {
  seed: number;
  count: number;
  mix: Mix;
}

const workerSource = `
  const { parentPort, workerData } = require('worker_threads');
  const { vllmBatches } = require(workerData.module);
  for (const chunk of workerData.chunks) {
    const { payloads } = vllmBatches(chunk.seed, chunk.count, chunk.mix);
    const buffers = payloads.map((p) => p.buffer.slice(p.byteOffset, p.byteOffset + p.byteLength));
    parentPort.postMessage(buffers, buffers);
  }`;

/**
 * `perSource` fresh messages for each seed, as vllmBatches builds them (payloads only), with the mix
 * `mixAt` gives for the chunk of source `source` starting at message `at` (default: growing).
 */
export async function freshBatches(seeds: number[], perSource: number, mixAt: (source: number, at: number) => Mix = () => ({ kind: 'growing' })): Promise<Buffer[][]> {
  const chunks: { source: number; index: number; chunk: Chunk }[] = [];
  seeds.forEach((seed, source) => {
    for (let at = 0, index = 0; at < perSource; at += CHUNK_MESSAGES, index++) {
      chunks.push({ source, index, chunk: { seed: seed * 7919 + index, count: Math.min(CHUNK_MESSAGES, perSource - at), mix: mixAt(source, at) } });
    }
  });
  const threads = Math.max(1, Math.min(availableParallelism(), chunks.length));
  const parts = seeds.map(() => [] as Buffer[][]);
  await Promise.all(
    Array.from({ length: threads }, (_, t) => {
      const mine = chunks.filter((_, i) => i % threads === t);
      return new Promise<void>((resolve, reject) => {
        const worker = new Worker(workerSource, {
          eval: true,
          workerData: { module: path.join(__dirname, 'vllm-batches.js'), chunks: mine.map((c) => c.chunk) },
        });
        let next = 0;
        worker.on('message', (buffers: ArrayBuffer[]) => {
          const { source, index } = mine[next++];
          parts[source][index] = buffers.map((b) => Buffer.from(b));
        });
        worker.once('error', reject);
        worker.once('exit', (code) => (code === 0 && next === mine.length ? resolve() : reject(new Error(`batch worker exited ${code}`))));
      });
    }),
  );
  return parts.map((p) => p.flat());
}
