// FilterUpdate bytes with the payload spliced in are exactly the canonical encoding of the message.
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
