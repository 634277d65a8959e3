// The query pipeline of one pool over the native core: tokens → salted block hashes → canonical
// sequence hashes (hashing-ckf-cbi1.md §1), and CKF addressing for probes (§2.2).
import { ckfPrepare, saltSeed, sequenceHashes } from '../native/hashing';
import type { QueryHasher } from './query';

export const queryHasher: QueryHasher = {
  sequenceHashes(tokens, kvBlockSize, eagle, lora) {
    // The LoRA salt is the canonical adapter name; base-model queries carry no salt (seed 1337).
    return sequenceHashes(tokens, kvBlockSize, eagle, saltSeed(null, lora ?? null));
  },
  prepare(hash, bucketCount, seed) {
    return ckfPrepare(hash, bucketCount, seed);
  },
};
