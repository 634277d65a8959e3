// The worker-thread snapshot encoder: a 2^24-bucket (128 MiB) table encodes off the event loop,
// the words stay alive while the worker reads them, and concurrent encodes do not interfere.
import { decodeFrame, encodeSnapshotAsync, encodeSnapshotChunks, filterFormat, SnapshotAssembly, CBI1 } from '../../src/native';
import { fullGc } from '../../bench/support/gc';
import { withStallMonitor } from '../../bench/support/stall';

const SEED = 0x5deece66d1b54a33n;

/** A deterministic table: word i has both u32 halves derived from i; every 7th word is zero. */
function table(bucketCount: number, salt: number): BigUint64Array {
  const words = new BigUint64Array(bucketCount);
  const halves = new Uint32Array(words.buffer);
  for (let i = 0; i < bucketCount; i++) {
    if (i % 7 === 0) continue;
    halves[2 * i] = Math.imul(i ^ salt, 0x9e3779b1) >>> 0;
    halves[2 * i + 1] = (i + salt) >>> 0;
  }
  return words;
}

function rebuild(bucketCount: number, chunks: Buffer[], seed: bigint): { epoch: bigint; words: BigUint64Array } {
  const assembly = new SnapshotAssembly({ seed, bucketCount });
  let done = null;
  for (const chunk of chunks) done = assembly.absorb(chunk);
  if (!done) throw new Error('assembly did not complete');
  // Copied as u32 halves: BigInt element access would dominate the test's run time.
  const words = new BigUint64Array(bucketCount);
  const target = new Uint32Array(words.buffer);
  const source = new Uint32Array(done.values.buffer, done.values.byteOffset, done.values.length * 2);
  done.buckets.forEach((bucket, i) => {
    target[2 * bucket] = source[2 * i];
    target[2 * bucket + 1] = source[2 * i + 1];
  });
  return { epoch: done.epoch, words };
}

function sameWords(a: BigUint64Array, b: BigUint64Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

test('a 2^24-bucket snapshot encodes on a worker thread while the event loop keeps turning', async () => {
  const bucketCount = CBI1.maxBucketCount;
  const words = table(bucketCount, 1);
  const format = filterFormat({ seed: SEED, bucketCount });
  // Off the loop thread: the loop keeps turning while the worker encodes (an encoder on the loop
  // thread would give it no turn until the promise settles). How long the loop is held is a
  // benchmark number (bench/snapshot.ts), not a test bound: CI load makes wall time meaningless.
  const { result: chunks, stall } = await withStallMonitor(() => encodeSnapshotAsync(format, 77n, 9n, words));
  expect(stall.turns).toBeGreaterThan(10);
  expect(chunks).toHaveLength(32);
  for (const chunk of chunks) expect(chunk.length).toBe(CBI1.maxFrameBytes);
  const last = decodeFrame(format, chunks[31]);
  expect(last).toMatchObject({ kind: 'chunk', chunkIndex: 31, chunkCount: 32, bucketOffset: 31 * 524288 });
  const rebuilt = rebuild(bucketCount, chunks, SEED);
  expect(rebuilt.epoch).toBe(9n);
  expect(sameWords(rebuilt.words, words)).toBe(true);
});

test('the words array stays alive while the worker reads it, even with no JavaScript reference', async () => {
  const bucketCount = 1 << 22;
  const format = { seed: SEED, bucketCount };
  // The only reference to the words is the one the pending encode holds.
  const pending = encodeSnapshotAsync(format, 5n, 6n, table(bucketCount, 2));
  for (let i = 0; i < 5; i++) {
    await fullGc();
    // Allocation pressure so a freed backing store would be reused.
    new BigUint64Array(bucketCount).fill(0xdeadn);
  }
  const chunks = await pending;
  expect(sameWords(rebuild(bucketCount, chunks, SEED).words, table(bucketCount, 2))).toBe(true);
});

test('concurrent encodes of different tables produce the same bytes as the synchronous encoder', async () => {
  const formats = [1 << 10, 1 << 19, 1 << 20].map((bucketCount) => ({ seed: SEED, bucketCount }));
  const tables = formats.map((f, i) => table(f.bucketCount, 10 + i));
  const results = await Promise.all(formats.map((f, i) => encodeSnapshotAsync(f, BigInt(i), 3n, tables[i])));
  results.forEach((chunks, i) => {
    const expected = encodeSnapshotChunks(formats[i], BigInt(i), 3n, tables[i]);
    expect(chunks.length).toBe(expected.length);
    chunks.forEach((chunk, j) => expect(chunk.equals(expected[j])).toBe(true));
  });
});

test('recycled snapshot memory is reused only after every chunk of the previous snapshot is collected', async () => {
  const bucketCount = 1 << 21;
  const format = { seed: SEED, bucketCount };
  const first = await encodeSnapshotAsync(format, 1n, 1n, table(bucketCount, 3));
  const firstCopy = first.map((chunk) => Buffer.from(chunk));
  // While `first` is alive its memory must not be handed out again.
  await fullGc();
  const second = await encodeSnapshotAsync(format, 1n, 2n, table(bucketCount, 4));
  first.forEach((chunk, i) => expect(chunk.equals(firstCopy[i])).toBe(true));
  expect(sameWords(rebuild(bucketCount, second, SEED).words, table(bucketCount, 4))).toBe(true);
  // Dropping one chunk is not enough: the region lives until all its chunks are gone.
  const keep = first[2];
  first.length = 0;
  await fullGc();
  const third = await encodeSnapshotAsync(format, 1n, 3n, table(bucketCount, 5));
  expect(keep.equals(firstCopy[2])).toBe(true);
  expect(sameWords(rebuild(bucketCount, third, SEED).words, table(bucketCount, 5))).toBe(true);
});
