// ProducerKey: the frozen 13-dimension equality (identity-topology-load.md §2.3).
import { ProducerKey, poolKey, producerKey } from '../../src/wire/producer-key';
import type { ProducerIdentity } from '../../src/wire/types';
import { mutated } from './expect-validation';
import { producer } from './fixtures';

function keyOf(p: ProducerIdentity): ProducerKey {
  const r = ProducerKey.from(p);
  if (!r.ok) throw new Error(r.error.message);
  return r.key;
}

const DIMENSIONS: [string, (p: ProducerIdentity) => void][] = [
  // identity_version cannot change and stay valid; it is covered through producerKey below.
  ['cache digest', (p) => (p.poolId!.indexerDomain!.cacheSemantics!.digest[0] ^= 1)],
  ['cache source', (p) => (p.poolId!.indexerDomain!.cacheSemantics!.source = 2)],
  ['routing digest', (p) => (p.poolId!.indexerDomain!.routingScope!.digest[15] ^= 1)],
  ['routing source', (p) => (p.poolId!.indexerDomain!.routingScope!.source = 2)],
  ['dc_id', (p) => (p.poolId!.dcId += 1n)],
  ['producer_incarnation', (p) => (p.producerIncarnation += 1n)],
  ['layout_generation', (p) => (p.layoutGeneration += 1n)],
  ['seed', (p) => (p.ckfFormat!.seed ^= 1n)],
  ['bucket_count', (p) => (p.ckfFormat!.bucketCount *= 2n)],
];

test.each(DIMENSIONS)('changing %s changes the key', (_name, mutate) => {
  const a = keyOf(producer());
  const b = keyOf(mutated(producer(), mutate));
  expect(a.equals(b)).toBe(false);
  expect(a.key).not.toBe(b.key);
});

test('every one of the 13 dimensions alters the string key (validated or not)', () => {
  const all: ((p: ProducerIdentity) => void)[] = [
    (p) => (p.poolId!.identityVersion = 2),
    ...DIMENSIONS.map((d) => d[1]),
    (p) => (p.ckfFormat!.formatVersion = 2),
    (p) => (p.ckfFormat!.fingerprintBits = 8),
    (p) => (p.ckfFormat!.slotsPerBucket = 8),
  ];
  expect(all).toHaveLength(13);
  const keys = new Set([producerKey(producer()), ...all.map((m) => producerKey(mutated(producer(), m)))]);
  expect(keys.size).toBe(14);
});

test('equal identities give equal keys (independent objects)', () => {
  expect(keyOf(producer()).equals(keyOf(producer()))).toBe(true);
  expect(producerKey(producer())).toBe(producerKey(structuredClone(producer())));
});

test('an invalid identity yields the validation error, not a key', () => {
  const r = ProducerKey.from(mutated(producer(), (p) => (p.layoutGeneration = 0n)));
  expect(r.ok).toBe(false);
  if (!r.ok) expect(r.error.kind).toBe('ZeroLayoutGeneration');
  const u = ProducerKey.from(mutated(producer(), (p) => (p.ckfFormat!.slotsPerBucket = 2)));
  expect(!u.ok && u.error.unsupported).toBe(true);
});

test('missing parts do not collide with present ones', () => {
  const noFormat = mutated(producer(), (p) => delete p.ckfFormat);
  const noPool = mutated(producer(), (p) => delete p.poolId);
  expect(new Set([producerKey(producer()), producerKey(noFormat), producerKey(noPool)]).size).toBe(3);
});

test('poolKey ignores everything outside the pool id', () => {
  const a = producer(1n);
  const b = producer(2n);
  expect(poolKey(a.poolId!)).toBe(poolKey(b.poolId!));
  expect(poolKey(a.poolId!)).not.toBe(poolKey(producer(1n, 9n).poolId!));
});
