import {
  LayoutGenerationCounter,
  PROCESS_DRT_INSTANCE_ID,
  comparePoolIds,
  deriveCacheSemantics,
  deriveRoutingScope,
  dcIdStringError,
  newRelayIdentity,
  newRelayIncarnation,
} from '../../src/identity';
import { IdentitySource, KvQueryHashFormat } from '../../src/wire/enums';
import type { KvPoolId } from '../../src/wire/types';

describe('relay incarnation and identity', () => {
  test('incarnations are 63-bit and fresh', () => {
    const seen = new Set<bigint>();
    for (let i = 0; i < 1000; i++) {
      const v = newRelayIncarnation();
      expect(v >= 0n && v < 1n << 63n).toBe(true);
      seen.add(v);
    }
    expect(seen.size).toBe(1000);
  });

  test('a relay identity keeps the process instance id and takes a new incarnation per start', () => {
    const a = newRelayIdentity();
    const b = newRelayIdentity();
    expect(a.drtInstanceId).toBe(PROCESS_DRT_INSTANCE_ID);
    expect(b.drtInstanceId).toBe(PROCESS_DRT_INSTANCE_ID);
    expect(a.relayIncarnation).not.toBe(b.relayIncarnation);
  });
});

describe('LayoutGenerationCounter', () => {
  test('starts at 1 and increments by one, never 0', () => {
    const c = new LayoutGenerationCounter();
    expect(c.peek()).toBe(1n);
    expect([c.next(), c.next(), c.next()]).toEqual([1n, 2n, 3n]);
    expect(c.peek()).toBe(4n);
  });

  test('independent counters do not share state', () => {
    const a = new LayoutGenerationCounter();
    a.next();
    expect(new LayoutGenerationCounter().next()).toBe(1n);
  });
});

describe('dc id strings', () => {
  test.each([
    ['dc-a', true],
    ['', false],
    [' dc-a', false],
    ['dc-a\n', false],
    ['dc-a\u3000', false], // ideographic space is Unicode whitespace
    ['dc\u00a0a', true], // inner whitespace is fine
    ['\ufeffdc-a', true], // U+FEFF is not Unicode White_Space (Rust trim keeps it)
  ])('%j accepted: %s', (s, ok) => {
    expect(dcIdStringError(s) === undefined).toBe(ok);
  });
});

describe('derivation properties (identity-topology-load.md §1.3)', () => {
  const base = { defaults: ['meta/llama'], kvBlockSize: 512, hashFormat: KvQueryHashFormat.DYNAMO_STANDARD_V1 };
  const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

  test('explicit vs default with identical text differ (different tags)', () => {
    const d = deriveCacheSemantics(base).identity;
    const e = deriveCacheSemantics({ ...base, explicit: { 'meta/llama': 'meta/llama' } }).identity;
    expect(hex(d.digest)).not.toBe(hex(e.digest));
    expect(e.source).toBe(IdentitySource.EXPLICIT);
  });

  test('standard vs eagle differ', () => {
    const s = deriveCacheSemantics(base).identity;
    const e = deriveCacheSemantics({ ...base, hashFormat: KvQueryHashFormat.DYNAMO_EAGLE_V1 }).identity;
    expect(hex(s.digest)).not.toBe(hex(e.digest));
  });

  test('explicit material cannot remove block size and hash version', () => {
    const a = deriveCacheSemantics({ ...base, explicit: { weights: 'a' } }).material;
    const b = deriveCacheSemantics({ ...base, kvBlockSize: 64, explicit: { weights: 'a' } }).material;
    expect(a.subarray(-6).toString('hex')).toBe('000200000100');
    expect(b.subarray(-6).toString('hex')).toBe('400000000100');
  });

  test('explicit map order does not matter', () => {
    const a = deriveRoutingScope({ defaults: [], explicit: { b: '2', a: '1' } });
    const b = deriveRoutingScope({ defaults: [], explicit: { a: '1', b: '2' } });
    expect(a.material.equals(b.material)).toBe(true);
  });

  test('explicit map bounds are enforced', () => {
    const tooMany = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
    expect(() => deriveRoutingScope({ defaults: [], explicit: {} })).toThrow(RangeError);
    expect(() => deriveRoutingScope({ defaults: [], explicit: tooMany })).toThrow(RangeError);
    expect(() => deriveRoutingScope({ defaults: [], explicit: { ['k'.repeat(129)]: 'v' } })).toThrow(RangeError);
    expect(() => deriveRoutingScope({ defaults: [], explicit: { k: 'v'.repeat(1025) } })).toThrow(RangeError);
    expect(() => deriveRoutingScope({ defaults: [], explicit: { k: '' } })).toThrow(RangeError);
    expect(() => deriveRoutingScope({ defaults: [], explicit: { ['k'.repeat(128)]: 'v'.repeat(1024) } })).not.toThrow();
  });

  test('unspecified hash format has no identity version', () => {
    expect(() => deriveCacheSemantics({ ...base, hashFormat: KvQueryHashFormat.UNSPECIFIED })).toThrow(RangeError);
  });
});

describe('comparePoolIds (catalog order)', () => {
  const pid = (cache: number, cacheSource: number, routing: number, dc: bigint): KvPoolId => ({
    identityVersion: 1,
    indexerDomain: {
      cacheSemantics: { digest: new Uint8Array(16).fill(cache), source: cacheSource },
      routingScope: { digest: new Uint8Array(16).fill(routing), source: IdentitySource.DEFAULT_DERIVED },
    },
    dcId: dc,
  });

  test('cache digest, then cache source, then routing, then dc id', () => {
    const sorted = [
      pid(2, 1, 0, 0n),
      pid(1, 2, 0, 0n),
      pid(1, 1, 1, 0n),
      pid(1, 1, 0, 5n),
      pid(1, 1, 0, 1n << 63n),
      pid(1, 1, 0, 0n),
    ].sort(comparePoolIds);
    expect(sorted).toEqual([
      pid(1, 1, 0, 0n),
      pid(1, 1, 0, 5n),
      pid(1, 1, 0, 1n << 63n),
      pid(1, 1, 1, 0n),
      pid(1, 2, 0, 0n),
      pid(2, 1, 0, 0n),
    ]);
  });
});
