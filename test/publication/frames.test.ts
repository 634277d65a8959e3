// FilterUpdate bytes built around the cached identity fields are exactly the canonical encoding of the message.
import { filterUpdateMessage, heartbeatMessage } from '../../src/publication/frames';
import { decodeMessage, encodeMessage } from '../../src/wire/codec';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { FilterUpdateKind } from '../../src/wire/enums';
import { testProducer } from '../support/test-source';
import { RELAY } from '../transport/helpers';

const producer = testProducer({ bucketCount: 1 << 20 });

// Payload lengths around every varint length boundary, up to a full 4 MiB snapshot chunk.
test.each([1, 127, 128, 16_383, 16_384, (1 << 21) - 1, 1 << 21, 4 << 20])('a %i-byte payload: canonical bytes, every field intact', (n) => {
  const payload = Buffer.alloc(n);
  for (let i = 0; i < n; i += 997) payload[i] = (i * 31) & 0xff;
  payload[n - 1] = 0xa5;
  const bytes = filterUpdateMessage(RELAY, producer, 7n, 8n, FilterUpdateKind.DELTA, payload);
  const decoded = decodeMessage('FilterUpdate', bytes);
  expect(decoded).toEqual({
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay: RELAY,
    producer,
    baseSequence: 7n,
    sequence: 8n,
    sendTsUs: decoded.sendTsUs,
    kind: FilterUpdateKind.DELTA,
    payload: expect.any(Uint8Array),
    contractMarker: RELAY_CONTRACT_MARKER,
  });
  expect(Buffer.from(decoded.payload).equals(payload)).toBe(true);
  expect(decoded.sendTsUs).toBeGreaterThan(0n);
  expect(encodeMessage('FilterUpdate', decoded).equals(bytes)).toBe(true);
});

test('a heartbeat has no payload field and is canonical too', () => {
  const bytes = heartbeatMessage(RELAY, producer, 9n);
  const decoded = decodeMessage('FilterUpdate', bytes);
  expect([decoded.kind, decoded.baseSequence, decoded.sequence, decoded.payload.length]).toEqual([FilterUpdateKind.HEARTBEAT, 9n, 9n, 0]);
  expect(encodeMessage('FilterUpdate', decoded).equals(bytes)).toBe(true);
});

// Sequences around every varint length boundary (0 is omitted, 2^64 − 1 takes 10 bytes), every kind.
const U64_EDGES = [0n, 1n, 127n, 128n, (1n << 32n) - 1n, 1n << 32n, (1n << 35n) - 1n, 1n << 35n, (1n << 63n) - 1n, 1n << 63n, (1n << 64n) - 1n];

test.each(Object.values(FilterUpdateKind))('kind %i: canonical bytes for sequences at every varint boundary', (kind) => {
  for (const [i, base] of U64_EDGES.entries()) {
    const sequence = U64_EDGES[(i + 3) % U64_EDGES.length];
    const payload = Buffer.from([kind, i]);
    const bytes = filterUpdateMessage(RELAY, producer, base, sequence, kind, payload);
    const decoded = decodeMessage('FilterUpdate', bytes);
    expect([decoded.baseSequence, decoded.sequence, decoded.kind, decoded.relay, decoded.producer]).toEqual([base, sequence, kind, RELAY, producer]);
    expect(encodeMessage('FilterUpdate', decoded).equals(bytes)).toBe(true);
  }
});

test('the cached identity fields follow the relay identity and the producer identity of each frame', () => {
  const other = testProducer({ bucketCount: 1 << 10, incarnation: 77n });
  const relay2 = { drtInstanceId: 5n, relayIncarnation: 6n };
  for (const [relay, prod] of [[RELAY, producer], [relay2, producer], [relay2, other], [RELAY, other], [RELAY, producer]] as const) {
    const decoded = decodeMessage('FilterUpdate', filterUpdateMessage(relay, prod, 1n, 2n, FilterUpdateKind.DELTA, Buffer.from([1])));
    expect([decoded.relay, decoded.producer]).toEqual([relay, prod]);
  }
});

test('a sequence outside u64 is a RangeError', () => {
  expect(() => filterUpdateMessage(RELAY, producer, -1n, 2n, FilterUpdateKind.DELTA, Buffer.from([1]))).toThrow(RangeError);
  expect(() => filterUpdateMessage(RELAY, producer, 1n, 1n << 64n, FilterUpdateKind.DELTA, Buffer.from([1]))).toThrow(RangeError);
});
