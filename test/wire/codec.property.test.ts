// Property checks of the codec: any u64 and any Unicode text survive encode → decode exactly.
import fc from 'fast-check';
import { decodeMessage, encodeMessage } from '../../src/wire/codec';
import { FilterUpdateKind } from '../../src/wire/enums';
import type { FilterUpdate } from '../../src/wire/types';
import { MARKER, RELAY } from './fixtures';

const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const u32 = fc.integer({ min: 0, max: 0xffffffff });

test('FilterUpdate u64 fields and payload round-trip', () => {
  fc.assert(
    fc.property(u64, u64, u64, fc.uint8Array({ maxLength: 64 }), u32, (base, seq, ts, payload, marker) => {
      const msg: FilterUpdate = {
        protocolVersion: 1, relay: RELAY, baseSequence: base, sequence: seq, sendTsUs: ts,
        kind: FilterUpdateKind.DELTA, payload, contractMarker: marker,
      };
      const back = decodeMessage('FilterUpdate', encodeMessage('FilterUpdate', msg));
      expect(back).toEqual({ ...msg, payload: Buffer.from(payload) });
      expect([back.baseSequence, back.sequence, back.sendTsUs]).toEqual([base, seq, ts]);
    }),
  );
});

test('subscriber ids of any Unicode text round-trip unchanged (no trimming)', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (subscriberId) => {
      const msg = { subscriberId, contractMarker: MARKER };
      expect(decodeMessage('WatchKvPoolCatalogRequest', encodeMessage('WatchKvPoolCatalogRequest', msg))).toEqual(msg);
    }),
  );
});
