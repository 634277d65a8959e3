// Cuckoo filter: addressing, bucket count, SplitMix64, bucket words (ckf_addressing.json,
// splitmix.json) and the three producer scenarios of ckf_operations.json, op by op.
import fc from 'fast-check';
import { XXHash3 } from 'xxhash-addon';
import { bucketContains, ckfBucketCount, ckfPrepare } from '../../src/native';
import { canonicalPool, laneRngSeed, RawCanonicalResult, splitmixNext } from '../support/native-testing';
import { DEFAULT_CKF_SEED } from '../../src/config/defaults';
import { expectThrows, loadVector } from './hashing.helpers';

const addressing = loadVector('ckf_addressing.json');
const splitmix = loadVector('splitmix.json');
const operations = loadVector('ckf_operations.json');

describe('ckf_addressing.json', () => {
  test('default seed matches', () => {
    expect(BigInt(addressing.default_seed)).toBe(DEFAULT_CKF_SEED);
  });

  test.each<[number, string, number, any]>(
    addressing.cases.map((c: { sequence_hash_hex: string; bucket_count: number }, i: number) => [
      i,
      c.sequence_hash_hex,
      c.bucket_count,
      c,
    ]),
  )('case %i: prepare(%s) over %i buckets', (_i, _h, _n, c) => {
    const p = ckfPrepare(BigInt(c.sequence_hash), c.bucket_count, BigInt(c.seed));
    expect(p).toEqual({ fingerprint: c.fingerprint, bucketA: c.bucket_a, bucketB: c.bucket_b });
    // alt is an involution: preparing never yields a == b.
    expect(p.bucketA ^ p.bucketB).toBe(c.alt_xor);
  });

  test.each<[string, any]>(addressing.bucket_count_for_expected_blocks.map((c: { expected_blocks: string }) => [c.expected_blocks, c]))(
    'bucket count for %s expected blocks',
    (_n, c: { expected_blocks: string; bucket_count?: string; error?: string }) => {
      const n = BigInt(c.expected_blocks);
      if (c.error !== undefined) {
        expectThrows(() => ckfBucketCount(n), 'Error', c.error);
      } else {
        expect(ckfBucketCount(n)).toBe(Number(c.bucket_count));
        if (n <= BigInt(Number.MAX_SAFE_INTEGER)) expect(ckfBucketCount(Number(n))).toBe(Number(c.bucket_count));
      }
    },
  );

  test('fp != 0 and a != b for many hashes (upstream property)', () => {
    for (let h = 0n; h < 2000n; h++) {
      const p = ckfPrepare(h, 1024, 0x1234_5678_9abc_def0n);
      expect(p.fingerprint).not.toBe(0);
      expect(p.bucketA).not.toBe(p.bucketB);
    }
  });

  // The native addressing keys XXH3's short-input paths once per seed (ckf::SeededXxh3); this checks
  // it against xxhash-addon's XXH3 for arbitrary hashes, seeds and sizes (spec §2.2).
  test('prepare equals the spec formula over an independent XXH3', () => {
    const xxh3 = (bytes: Buffer, seed: bigint): bigint => {
      const seedBuf = Buffer.alloc(8);
      seedBuf.writeBigUInt64BE(seed);
      const h = new XXHash3(seedBuf);
      h.update(bytes);
      return h.digest().readBigUInt64BE();
    };
    const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    fc.assert(
      fc.property(u64, u64, fc.integer({ min: 1, max: 24 }), (hash, seed, log2) => {
        const buckets = 2 ** log2;
        const mask = BigInt(buckets - 1);
        const le64 = Buffer.alloc(8);
        le64.writeBigUInt64LE(hash);
        const mixed = xxh3(le64, seed);
        const fp = Number(mixed & 0xffffn) || 1;
        const a = Number((mixed >> 16n) & mask);
        const le16 = Buffer.alloc(2);
        le16.writeUInt16LE(fp);
        const d = Number(xxh3(le16, seed ^ 0x9e37_79b9_7f4a_7c15n) & mask) || 1;
        expect(ckfPrepare(hash, buckets, seed)).toEqual({ fingerprint: fp, bucketA: a, bucketB: a ^ d });
      }),
      { numRuns: 3000 },
    );
  });

  test('bad arguments', () => {
    expectThrows(() => ckfPrepare(1n, 1000, 1n), 'RangeError');
    expectThrows(() => ckfPrepare(1n, 1, 1n), 'RangeError');
    expectThrows(() => ckfPrepare(1 as never, 16, 1n), 'TypeError');
    expectThrows(() => ckfBucketCount(-1), 'RangeError');
    expectThrows(() => ckfBucketCount('5' as never), 'TypeError');
    expectThrows(() => bucketContains(1n, 0), 'RangeError');
    expectThrows(() => bucketContains(1n, 65536), 'RangeError');
    expectThrows(() => splitmixNext(-1n), 'RangeError');
  });
});

describe('splitmix.json', () => {
  test('lane seeds', () => {
    for (const l of splitmix.lane_rng_seed) {
      expect(laneRngSeed(BigInt(splitmix.default_seed), l.lane)).toBe(BigInt(l.value));
    }
  });

  test('lane 0 outputs and states', () => {
    let state = laneRngSeed(BigInt(splitmix.default_seed), 0);
    for (const o of splitmix.lane0_next_outputs) {
      const next = splitmixNext(state);
      expect(next.value).toBe(BigInt(o.output));
      expect(next.state).toBe(BigInt(o.state_after));
      state = next.state;
    }
  });

  test('single steps', () => {
    for (const e of splitmix.next_random_examples) {
      expect(splitmixNext(BigInt(e.state_before))).toEqual({ value: BigInt(e.output), state: BigInt(e.state_after) });
    }
  });
});

describe('bucket words', () => {
  test('README example word holds slots [0x1234, 0, 0xabcd, 1]', () => {
    const word = 0x0001abcd00001234n;
    for (const fp of [0x1234, 0xabcd, 1]) expect(bucketContains(word, fp)).toBe(true);
    for (const fp of [0x1235, 0xabcc, 2, 0xffff]) expect(bucketContains(word, fp)).toBe(false);
  });

  test('SWAR contains equals the scalar slot test', () => {
    const slot = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 0xffff }));
    fc.assert(
      fc.property(fc.tuple(slot, slot, slot, slot), fc.integer({ min: 1, max: 0xffff }), (slots, fp) => {
        const word = slots.reduce((w, s, k) => w | (BigInt(s) << BigInt(16 * k)), 0n);
        expect(bucketContains(word, fp)).toBe(slots.includes(fp));
        for (const s of slots) if (s !== 0) expect(bucketContains(word, s)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

interface Op {
  op: 'insert' | 'remove' | 'reoffer';
  hash: string;
  outcome: string;
  owners_after: number;
  kicks: number;
  rng_draws: number;
  changed: [number, string][];
  rng_state_after?: string;
  buckets_after?: string[];
}

interface Scenario {
  name: string;
  bucket_count: number;
  seed: string;
  max_kicks: number;
  initial_rng_state: string;
  ops: Op[];
  final_buckets: string[];
  final_owners: [string, number, boolean][] | null;
  summary: { final_rng_state: string; final_resident_hashes: number; final_owned_hashes: number };
}

describe('ckf_operations.json', () => {
  test.each<[string, Scenario]>(operations.scenarios.map((s: Scenario) => [s.name, s]))('%s op by op', (_name, s: Scenario) => {
    const pool = canonicalPool({ bucketCount: s.bucket_count, seed: BigInt(s.seed), maxKicks: s.max_kicks });
    expect(pool.stats().rngState).toBe(BigInt(s.initial_rng_state));
    let rngState = BigInt(s.initial_rng_state);
    s.ops.forEach((op, i) => {
      const hash = BigInt(op.hash);
      let r: RawCanonicalResult;
      if (op.op === 'insert') r = pool.insertCanonical(hash);
      else if (op.op === 'remove') r = pool.removeCanonical(hash);
      else r = pool.reofferCanonical(hash);
      const got = {
        i,
        outcome: r.outcome,
        owners: r.owners,
        kicks: r.kicks,
        rngDraws: r.rngDraws,
        changed: Array.from(r.changedBuckets, (b, k) => [b, r.changedWords[k].toString()]),
      };
      expect(got).toEqual({
        i,
        outcome: op.outcome,
        owners: op.owners_after,
        kicks: op.kicks,
        rngDraws: op.rng_draws,
        changed: op.changed,
      });
      if (op.rng_state_after !== undefined) rngState = BigInt(op.rng_state_after);
      expect(r.rngState).toBe(rngState);
      if (op.buckets_after !== undefined) {
        expect(Array.from(pool.words(), String)).toEqual(op.buckets_after);
      }
      // A window holding only this op drains exactly the op's changed pairs.
      const images = pool.drain();
      expect(images === null ? [] : Array.from(images.buckets, (b, k) => [b, images.values[k].toString()])).toEqual(
        op.changed,
      );
    });
    expect(Array.from(pool.words(), String)).toEqual(s.final_buckets);
    expect(pool.stats().rngState).toBe(BigInt(s.summary.final_rng_state));
    expect(pool.stats().residentCount).toBe(s.summary.final_resident_hashes);
    expect(pool.stats().ownedHashes).toBe(s.summary.final_owned_hashes);
    for (const [hash, owners, resident] of s.final_owners ?? []) {
      expect([hash, pool.owners(BigInt(hash)), pool.isResident(BigInt(hash))]).toEqual([hash, owners, resident]);
      if (resident) expect(pool.contains(BigInt(hash))).toBe(true);
    }
  });
});
