// Token hashing throughput through the batch API vs raw XXH3 over the same block windows (same run).
import { hashBatch, hashBatchAsync, packPrompts, PromptBatch, saltSeed } from '../src/native';
import { xxh3BlocksBaseline } from '../test/support/native-testing';
import type { BenchResult } from './support/result';

const PROMPTS = 512;
const TOKENS_PER_PROMPT = 2048;
const MIN_SECONDS = 0.4;

function randomPrompts(): PromptBatch {
  let x = 0x9e3779b9;
  const prompts: Uint32Array[] = [];
  for (let p = 0; p < PROMPTS; p++) {
    const t = new Uint32Array(TOKENS_PER_PROMPT);
    for (let i = 0; i < t.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      t[i] = (x >>> 0) % 152_064; // a realistic vocabulary size
    }
    prompts.push(t);
  }
  return packPrompts(prompts);
}

/** Calls per second of `fn`, best of repeated timing slices (after a warm-up call). */
async function rate(fn: () => unknown | Promise<unknown>): Promise<number> {
  await fn();
  let best = 0;
  const end = process.hrtime.bigint() + BigInt(MIN_SECONDS * 1e9);
  while (process.hrtime.bigint() < end) {
    const start = process.hrtime.bigint();
    await fn();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    best = Math.max(best, 1 / seconds);
  }
  return best;
}

export async function run(): Promise<BenchResult[]> {
  const batch = randomPrompts();
  const tokens = batch.tokens.length;
  const seed = saltSeed('tenant-a', 'adapter-a');
  const results: BenchResult[] = [];
  for (const kvBlockSize of [16, 64]) {
    const opts = { kvBlockSize, seed };
    const raw = tokens * (await rate(() => xxh3BlocksBaseline(batch, opts)));
    const baseline = { name: `raw XXH3 over the same ${kvBlockSize}-token windows (native loop)`, value: raw };
    const blocks = tokens * (await rate(() => hashBatch(batch, { ...opts, sequence: false })));
    const sequence = tokens * (await rate(() => hashBatch(batch, { ...opts, sequence: true })));
    const asyncSeq = tokens * (await rate(() => hashBatchAsync(batch, { ...opts, sequence: true })));
    const row = (name: string, value: number, note: string): BenchResult => ({
      name,
      value,
      unit: 'tokens/s',
      baseline,
      ratio: value / raw,
      note,
    });
    results.push(
      row(`hashBatch block hashes, bs ${kvBlockSize}`, blocks, 'target ratio >= 0.7'),
      row(
        `hashBatch sequence hashes, bs ${kvBlockSize}`,
        sequence,
        'also hashes the 16-byte chain input per block, which the baseline does not; target ratio >= 0.7',
      ),
      row(`hashBatchAsync sequence hashes, bs ${kvBlockSize}`, asyncSeq, 'worker thread, includes promise round trip'),
    );
  }
  return results;
}
