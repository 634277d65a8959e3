// The native decoder against the current JS path (decode.ts + events.ts + PoolEventBatch) on random
// batches built with msgpackr: the same packed bytes and counters, or both reject.
import fc from 'fast-check';
import { EngineBatchDecoder, type EngineDecoderOptions } from '../../src/native';
import { batchArbitrary, jsDecode, nativeDecode, OPTIONS, outcome, type Outcome } from './engine-decoder.helpers';

function compare(decoder: EngineBatchDecoder, opts: EngineDecoderOptions, payload: Uint8Array, fallbackRank: number): [Outcome, Outcome] {
  return [outcome(() => nativeDecode(decoder, payload, fallbackRank)), outcome(() => jsDecode(payload, opts, fallbackRank))];
}

describe.each<[string, EngineDecoderOptions]>([
  ['standard, bs 4', OPTIONS],
  ['eagle, bs 4', { ...OPTIONS, eagle: true }],
  ['standard, bs 1', { ...OPTIONS, kvBlockSize: 1 }],
  ['eagle, bs 3, ranks 0..7', { ...OPTIONS, kvBlockSize: 3, eagle: true }],
])('%s', (_name, opts) => {
  const decoder = new EngineBatchDecoder(opts);

  it('random valid batches: byte-for-byte the same packed batch and counters', () => {
    let accepted = 0;
    fc.assert(
      fc.property(batchArbitrary(opts.kvBlockSize), fc.integer({ min: 0, max: 7 }), (payload, rank) => {
        const [native, js] = compare(decoder, opts, payload, rank);
        if ('ok' in js) {
          accepted += 1;
          expect(native).toEqual(js);
        } else {
          // The JS decoder refuses some generated batches (e.g. an mm_hash that is not a hash).
          expect('error' in native && native.error.code).toBe('MalformedKvBatch');
        }
      }),
      { numRuns: 1500 },
    );
    expect(accepted).toBeGreaterThan(1000);
  });

  it('mutated batches: whatever the native decoder accepts, the JS path accepts identically', () => {
    const mutation = fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), op: fc.constantFrom('set', 'insert', 'delete') });
    fc.assert(
      fc.property(batchArbitrary(opts.kvBlockSize), fc.array(mutation, { minLength: 1, maxLength: 3 }), (payload, mutations) => {
        let bytes = Buffer.from(payload);
        for (const m of mutations) {
          const at = m.at % (bytes.length + 1);
          if (m.op === 'set' && at < bytes.length) bytes[at] = m.byte;
          else if (m.op === 'insert') bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from([m.byte]), bytes.subarray(at)]);
          else bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]);
        }
        const [native, js] = compare(decoder, opts, bytes, 0);
        if ('ok' in native) {
          expect(js).toEqual(native);
        } else {
          expect(native.error.code === 'MalformedKvBatch' || native.error.code === 'RankOutOfRange').toBe(true);
          // Stricter than msgpackr by design: UTF-8, extension types, 0xc1, nesting depth.
          if ('ok' in js && native.error.code === 'MalformedKvBatch') {
            expect(native.error.message).toMatch(/UTF-8|extension|0xc1|nested/);
          }
        }
      }),
      { numRuns: 3000 },
    );
  });
});
