// hashBatch's fast paths: window sizes compiled as constants (16/32/64-token blocks), two prompts
// chained in one loop (unequal lengths, an odd prompt count, prompts shorter than a block), each
// checked against the per-prompt sequenceHashes / blockHashes.
import { blockHashes, hashBatch, packPrompts, saltSeed, sequenceHashes } from '../../src/native';

function prompts(count: number, maxTokens: number, seed: number): Uint32Array[] {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  return Array.from({ length: count }, (_, i) => {
    // Every third prompt is shorter than one block of the largest size.
    const length = i % 3 === 2 ? next() % 40 : next() % maxTokens;
    return Uint32Array.from({ length }, () => next() % 152_064);
  });
}

describe('hashBatch fast paths equal per-prompt hashing', () => {
  test.each([
    [16, false],
    [32, false],
    [64, false],
    [16, true], // a 68-byte window: the generic path
    [64, true],
  ])('bs %i eagle %s, 41 prompts', (kvBlockSize, eagle) => {
    const ps = prompts(41, 700, kvBlockSize * 3 + (eagle ? 1 : 0));
    const seed = saltSeed('tenant-b', null);
    for (const sequence of [true, false]) {
      const { hashes, blockOffsets } = hashBatch(packPrompts(ps), { kvBlockSize, eagle, seed, sequence });
      ps.forEach((p, i) => {
        const single = sequence ? sequenceHashes(p, kvBlockSize, eagle, seed) : blockHashes(p, kvBlockSize, eagle, seed);
        expect(Array.from(hashes.subarray(blockOffsets[i], i + 1 < ps.length ? blockOffsets[i + 1] : hashes.length))).toEqual(
          Array.from(single),
        );
      });
    }
  });
});
