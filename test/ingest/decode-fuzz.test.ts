// The production decoder, whatever an engine sends: it accepts, or rejects the whole payload with one
// coded error and writes nothing; it never crashes or throws anything else.
import fc from 'fast-check';
import { pack } from 'msgpackr';
import { EngineBatchDecoder } from '../../src/native';
import { OPTIONS, rejectsWithoutWriting } from '../native/engine-decoder.helpers';

const decoder = new EngineBatchDecoder(OPTIONS);

function decodesOrRejects(payload: Uint8Array): void {
  const e = rejectsWithoutWriting(decoder, payload);
  if (e) expect(['MalformedKvBatch', 'RankOutOfRange']).toContain(e.code);
}

const scalar = fc.oneof(
  fc.integer(),
  fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }),
  fc.double(),
  fc.string(),
  fc.constantFrom('BlockStored', 'BlockRemoved', 'AllBlocksCleared', 'GPU', 'CPU', 'full_attention'),
  fc.constant(null),
  fc.boolean(),
  fc.uint8Array({ maxLength: 40 }),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('node'), { maxLength: 6 }), fc.dictionary(fc.constantFrom('type', 'block_hashes', 'token_ids', 'block_size', 'medium', 'parent_block_hash', 'ts', 'events', 'x'), tie('node'), { maxKeys: 5 })),
})).node;

it('random bytes', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => decodesOrRejects(bytes)), { numRuns: 2000 });
});

it('random msgpack structures shaped like batches', () => {
  const event = fc.oneof(
    fc.tuple(fc.constantFrom('BlockStored', 'BlockRemoved', 'AllBlocksCleared'), value, value, value, value, value, value, value).map((t) => [...t]),
    fc.dictionary(fc.constantFrom('type', 'block_hashes', 'parent_block_hash', 'token_ids', 'block_size', 'medium', 'lora_name', 'extra_keys', 'group_idx'), value),
    value,
  );
  const batch = fc.oneof(fc.tuple(value, fc.array(event, { maxLength: 4 }), value), value);
  fc.assert(fc.property(batch, (b) => decodesOrRejects(pack(b))), { numRuns: 2000 });
});
