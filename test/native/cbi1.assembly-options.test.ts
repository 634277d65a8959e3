// SnapshotAssembly without image collection (what the consumer replica uses: it copies the dense
// chunk words itself): the same order, epoch and coverage checks, and no image list.
import { encodeSnapshotChunks, SnapshotAssembly } from '../../src/native';

const format = { seed: 0x5eedn, bucketCount: 1 << 20 };
const words = new BigUint64Array(format.bucketCount);
words[0] = 11n;
words[524289] = 22n;
words[1048575] = 33n;
const chunks = encodeSnapshotChunks(format, 9n, 6n, words);

test('validates and completes like the collecting assembly, without images', () => {
  const collecting = new SnapshotAssembly(format);
  const validating = new SnapshotAssembly(format, { images: false });
  expect(chunks).toHaveLength(2);
  expect([collecting.absorb(chunks[0]), validating.absorb(chunks[0])]).toEqual([null, null]);
  const full = collecting.absorb(chunks[1])!;
  const checked = validating.absorb(chunks[1])!;
  expect(full.epoch).toBe(6n);
  expect(Array.from(full.buckets)).toEqual([0, 524289, 1048575]);
  expect(checked.epoch).toBe(6n);
  expect([checked.buckets.length, checked.values.length]).toEqual([0, 0]);
});

test('still refuses chunks out of order and incomplete coverage', () => {
  const validating = new SnapshotAssembly(format, { images: false });
  expect(() => validating.absorb(chunks[1])).toThrow(expect.objectContaining({ code: 'ChunkSequence' }));
  const other = encodeSnapshotChunks(format, 9n, 7n, words);
  validating.absorb(chunks[0]);
  // Chunk 1 of another epoch after chunk 0 of epoch 6.
  expect(() => validating.absorb(other[1])).toThrow(expect.objectContaining({ code: 'ChunkSequence' }));
});

test('options are validated', () => {
  // Errors thrown by the addon come from another realm under jest: match by name, not class.
  const typeError = expect.objectContaining({ name: 'TypeError' });
  expect(() => new SnapshotAssembly(format, { images: 'no' as unknown as boolean })).toThrow(typeError);
  expect(() => new SnapshotAssembly(format, 5 as unknown as { images: boolean })).toThrow(typeError);
});
