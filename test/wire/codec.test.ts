import { decodeMessage, encodeMessage, wireCodec, WireDecodeError } from '../../src/wire/codec';
import { FilterUpdateKind } from '../../src/wire/enums';
import type { FilterUpdate, KvPoolCatalogUpdate, ServingLoadUpdate, TopologyMember } from '../../src/wire/types';
import { MARKER, RELAY, descriptor, modelServingLoad, poolServingLoad, producer, topologyEntry } from './fixtures';

const U64_MAX = (1n << 64n) - 1n;

test('golden: RelayInfoRequest with the marker is FD 07 31 52 56 4B', () => {
  expect(encodeMessage('RelayInfoRequest', { contractMarker: MARKER }).toString('hex')).toBe('fd073152564b');
  expect(decodeMessage('RelayInfoRequest', Buffer.from('fd073152564b', 'hex'))).toEqual({ contractMarker: 0x4b565231 });
});

test('proto3 defaults are omitted (canonical encoding)', () => {
  expect(encodeMessage('RelayInfo', { protocolVersion: 0, contractMarker: 0 })).toHaveLength(0);
  expect(encodeMessage('KvPoolLoadUpdate', {
    protocolVersion: 0, windowSequence: 0n, observedMs: 0n, windowMs: 0n, pools: [], contractMarker: 0,
  })).toHaveLength(0);
});

test('fixed64 and uint64 round-trip exactly at the extremes', () => {
  for (const v of [0n, 1n, (1n << 53n) + 1n, (1n << 63n) - 1n, 1n << 63n, U64_MAX - 1n, U64_MAX]) {
    const msg: FilterUpdate = {
      protocolVersion: 1,
      relay: { drtInstanceId: v, relayIncarnation: v },
      producer: { ...producer(v === 0n ? 1n : v), producerIncarnation: v },
      baseSequence: v,
      sequence: v,
      sendTsUs: v,
      kind: FilterUpdateKind.DELTA,
      payload: Buffer.from([1, 2, 3]),
      contractMarker: MARKER,
    };
    msg.producer!.poolId!.dcId = v;
    msg.producer!.ckfFormat!.seed = v;
    msg.producer!.ckfFormat!.bucketCount = v;
    const back = decodeMessage('FilterUpdate', encodeMessage('FilterUpdate', msg));
    expect(back).toEqual({ ...msg, payload: new Uint8Array([1, 2, 3]) });
    expect(back.sequence).toBe(v);
  }
});

test('fixed64 is 8 little-endian bytes; uint64 is a varint', () => {
  const hex = encodeMessage('RelayIdentity', { drtInstanceId: 0x0102030405060708n, relayIncarnation: 0n }).toString('hex');
  expect(hex).toBe('090807060504030201');
  expect(encodeMessage('KvPoolLoadUpdate', {
    protocolVersion: 0, windowSequence: U64_MAX, observedMs: 0n, windowMs: 0n, pools: [], contractMarker: 0,
  }).toString('hex')).toBe('18ffffffffffffffffff01');
});

test('a full catalog update round-trips', () => {
  const update: KvPoolCatalogUpdate = {
    protocolVersion: 1,
    relay: RELAY,
    revision: 3n,
    snapshot: { pools: [descriptor(1n), descriptor(2n, 5n)] },
    contractMarker: MARKER,
  };
  expect(decodeMessage('KvPoolCatalogUpdate', encodeMessage('KvPoolCatalogUpdate', update))).toEqual(update);
});

test('an empty snapshot message stays present (as prost sends it)', () => {
  const bytes = encodeMessage('KvPoolCatalogUpdate', {
    protocolVersion: 1, relay: RELAY, revision: 0n, snapshot: { pools: [] }, contractMarker: MARKER,
  });
  expect(decodeMessage('KvPoolCatalogUpdate', bytes).snapshot).toEqual({ pools: [] });
});

test('readiness entries round-trip; an absent optional pool id stays undefined', () => {
  const entry = topologyEntry();
  const back = decodeMessage('TopologyEntry', encodeMessage('TopologyEntry', entry));
  expect(back).toEqual(entry);
  expect('poolId' in back.members[1]).toBe(false);
});

test('repeated enums are packed', () => {
  const member: TopologyMember = { roles: [1, 5] };
  expect(encodeMessage('TopologyMember', member).toString('hex')).toBe('12020105');
  // An unpacked encoding (one tag per value) decodes too.
  expect(decodeMessage('TopologyMember', Buffer.from('10011005', 'hex')).roles).toEqual([1, 5]);
});

test('proto3 optional: zero is present, absent is undefined', () => {
  const zero = encodeMessage('TokenLoadStats', { activeDecodeBlocks: 0n });
  expect(zero.toString('hex')).toBe('1000');
  expect(decodeMessage('TokenLoadStats', zero)).toEqual({ activeDecodeBlocks: 0n });
  expect(decodeMessage('TokenLoadStats', Buffer.alloc(0))).toEqual({});
});

test('serving load windows round-trip (optional gauges kept exactly)', () => {
  const update: ServingLoadUpdate = {
    protocolVersion: 1,
    relay: RELAY,
    windowSequence: 2n,
    observedMs: 1_700_000_000_000n,
    windowMs: 10n,
    pools: [poolServingLoad(1), poolServingLoad(2)],
    models: [modelServingLoad(1), modelServingLoad(3)],
    contractMarker: MARKER,
  };
  expect(decodeMessage('ServingLoadUpdate', encodeMessage('ServingLoadUpdate', update))).toEqual(update);
});

test('oneof target: base and lora', () => {
  const codec = wireCodec('ModelTarget');
  expect(codec.decode(codec.encode({ base: { baseModel: 'm' } }))).toEqual({ base: { baseModel: 'm' } });
  expect(codec.decode(codec.encode({ lora: { baseModel: 'm', adapter: 'a' } }))).toEqual({ lora: { baseModel: 'm', adapter: 'a' } });
  // An unknown future variant (field 3) decodes as neither.
  expect(codec.decode(Buffer.from('1a00', 'hex'))).toEqual({});
});

test('unknown enum numbers survive decoding (open enums)', () => {
  const bytes = encodeMessage('KvQuerySemantics', { kvBlockSize: 16, hashFormat: 99 });
  expect(decodeMessage('KvQuerySemantics', bytes).hashFormat).toBe(99);
  const negative = encodeMessage('DigestIdentity', { digest: new Uint8Array(16), source: -1 });
  expect(decodeMessage('DigestIdentity', negative).source).toBe(-1);
});

test('unknown fields are skipped', () => {
  // field 99 varint 5, then contract_marker
  expect(decodeMessage('RelayInfoRequest', Buffer.from('980605fd073152564b', 'hex'))).toEqual({ contractMarker: MARKER });
});

test('malformed bytes throw WireDecodeError', () => {
  expect(() => decodeMessage('FilterUpdate', Buffer.from([0x42, 0x05, 0x01]))).toThrow(WireDecodeError);
  expect(() => decodeMessage('FilterUpdate', Buffer.from([0x0f]))).toThrow(WireDecodeError);
});

test.each([
  ['negative u64', { drtInstanceId: -1n, relayIncarnation: 0n }, RangeError],
  ['u64 overflow', { drtInstanceId: 1n << 64n, relayIncarnation: 0n }, RangeError],
  ['unsafe number for u64', { drtInstanceId: 2 ** 60, relayIncarnation: 0n }, TypeError],
])('encode rejects %s', (_name, msg, error) => {
  expect(() => encodeMessage('RelayIdentity', msg as never)).toThrow(error);
});

test('encode rejects out-of-range u32 and wrong scalar types', () => {
  expect(() => encodeMessage('RelayInfo', { protocolVersion: 2 ** 32, contractMarker: 0 })).toThrow(RangeError);
  expect(() => encodeMessage('RelayInfo', { protocolVersion: -1, contractMarker: 0 })).toThrow(RangeError);
  expect(() => encodeMessage('WatchKvPoolCatalogRequest', { subscriberId: 5 as never, contractMarker: 0 })).toThrow(TypeError);
  expect(() => encodeMessage('DigestIdentity', { digest: [1, 2] as never, source: 1 })).toThrow(TypeError);
});

test('encoding never mutates its input', () => {
  const d = descriptor();
  const copy = structuredClone(d);
  encodeMessage('KvPoolDescriptor', d);
  expect(d).toEqual(copy);
});
