// The native Dynamo event-plane decoder (native/ingest/router_event_decode.h) on what a hostile or
// broken publisher sends: every malformed message is a record with a reason, never a throw or a
// partial event; the filters of hashing-ckf-cbi1.md §4.1; the arguments are checked.
import { RouterEventBatchDecoder, routerEventRecord as R, type RouterEventFormat } from '../../src/native';
import { envelopeMsgpack, routerEventJson, routerEventMsgpack, zmqFrame, type RouterEventSpec } from '../support/dynamo-wire';

const store: RouterEventSpec = { workerId: 7n, residencyDomain: 'worker', eventId: 1, dpRank: 2, data: { stored: { parentHash: 5n, startPosition: 3, blocks: [{ blockHash: 1n, tokensHash: 2n }] } } };
const env = (payload: Uint8Array, topic = 'kv-events') => envelopeMsgpack({ publisherId: 9n, sequence: 4n, publishedAt: 1n, topic, payload });

function decode(messages: Uint8Array[], format: RouterEventFormat = 'envelope') {
  const decoder = new RouterEventBatchDecoder('kv-events', 'kv_events');
  const arena = Buffer.concat(messages);
  const ends = new Uint32Array(messages.length);
  let at = 0;
  messages.forEach((m, i) => (ends[i] = at += m.length));
  const batch = decoder.decode(arena, ends, messages.length, format);
  return { batch, errors: messages.map((_, i) => decoder.errorOf(i)), status: (i: number) => batch.records[i * R.stride + R.status], flags: (i: number) => batch.records[i * R.stride + R.flags] };
}

test('a store with parent and start position packs both (the pool checks them)', () => {
  const { batch } = decode([env(routerEventMsgpack(store))]);
  // [stored, rank 2, parent|start, start 3, 1 block], words [worker, parent, ext, tokens]
  expect([...batch.meta]).toEqual([1, 2, 3, 3, 1]);
  expect([...batch.words]).toEqual([7n, 5n, 1n, 2n]);
});

test.each([
  ['truncated envelope', env(routerEventMsgpack(store)).subarray(0, 20)],
  ['an envelope without a payload', envelopeMsgpack({ publisherId: 1n, sequence: 0n, publishedAt: 0n, topic: 'kv-events', payload: new Uint8Array() }).subarray(0, 60)],
  ['a payload that is not a RouterEvent', env(Buffer.from([0x91, 0x01]))],
  ['an unknown storage tier', env(routerEventMsgpack({ ...store, storageTier: 'gpu' as 'device' }))],
  ['a deeply nested value', env(Buffer.concat([Buffer.from([0x81, 0xa1, 0x78]), Buffer.alloc(64, 0x91), Buffer.from([0x01])]))],
  ['a map claiming more entries than bytes', Buffer.from([0xdf, 0xff, 0xff, 0xff, 0xff])],
])('%s is malformed, with a reason, and adds nothing', (_what, message) => {
  const good = env(routerEventMsgpack(store));
  const { batch, status, errors } = decode([message, good]);
  expect(status(0)).toBe(R.malformed);
  expect(errors[0]).not.toBe('');
  // The next message still decodes, and the bad one added nothing before it.
  expect(status(1)).toBe(R.ok);
  expect(batch.meta.length).toBe(5);
});

test('another topic is reported, not decoded; the legacy topic name is accepted', () => {
  const { status } = decode([env(routerEventMsgpack(store), 'other'), env(routerEventMsgpack(store), 'kv_events')]);
  expect(status(0)).toBe(R.otherTopic);
  expect(status(1)).toBe(R.ok);
});

test('filters (§4.1): other tiers and the cache_owner domain are not counted; a cleared counts on any tier', () => {
  const host = env(routerEventMsgpack({ ...store, storageTier: 'host_pinned' }));
  const owner = env(routerEventMsgpack({ ...store, residencyDomain: 'cache_owner' }));
  const noDomain = env(routerEventMsgpack({ ...store, residencyDomain: undefined }));
  const clearedOnHost = env(routerEventMsgpack({ ...store, storageTier: 'disk', data: 'cleared' }));
  const { flags, batch } = decode([host, owner, noDomain, clearedOnHost]);
  expect(flags(0) & (R.counted | R.otherTier)).toBe(R.otherTier);
  expect(flags(1) & (R.counted | R.unsupportedDomain)).toBe(R.unsupportedDomain);
  expect(flags(2) & R.counted).toBe(R.counted);
  expect(flags(3) & R.counted).toBe(R.counted);
  expect(batch.meta.length).toBe(10);
});

test('JSON: u64 values above 2^53 stay exact; bad JSON is malformed', () => {
  const big = { ...store, workerId: 18446744073709551615n, data: { removed: { blockHashes: [18446744073709551614n] } } } as RouterEventSpec;
  const { batch, status } = decode([Buffer.from(routerEventJson(big)), Buffer.from('{"worker_id":1,'), Buffer.from('{"worker_id":18446744073709551616}')], 'json');
  expect(status(0)).toBe(R.ok);
  expect([...batch.words]).toEqual([18446744073709551615n, 18446744073709551614n]);
  expect(status(1)).toBe(R.malformed);
  expect(status(2)).toBe(R.malformed);
});

test('framed: the 5-byte header must be version 1 with the right length', () => {
  const frame = zmqFrame(env(routerEventMsgpack(store)));
  const badVersion = Buffer.from(frame);
  badVersion[0] = 2;
  const badLength = Buffer.from(frame);
  badLength[4] ^= 1;
  const { status } = decode([frame, badVersion, badLength], 'framed');
  expect([status(0), status(1), status(2)]).toEqual([R.ok, R.malformed, R.malformed]);
});

test('arguments are checked', () => {
  const decoder = new RouterEventBatchDecoder('kv-events');
  expect(() => decoder.decode(new Uint8Array(4), Uint32Array.of(8), 1, 'envelope')).toThrow(/within the arena/);
  expect(() => decoder.decode(new Uint8Array(4), new Uint32Array(0), 1, 'envelope')).toThrow(/shorter than count/);
  expect(() => new RouterEventBatchDecoder('')).toThrow(/non-empty string/);
});
