// zstd-compressed requests are accepted (wire-contract.md §1.3).
import * as http2 from 'http2';
import { decodeMessage } from '../../src/wire/codec';
import { extendDecompress } from '../../src/transport/zstd';
import { zstdFrameSizes } from '../../src/transport/zstd-frame';
import { startTestRelay, type TestRelay } from './helpers';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => relay.close());

// WatchKvPoolCatalogRequest{subscriber_id: "consumer-a" × 12, marker KVR1} compressed by `zstd -19`.
const COMPRESSED_REQUEST = Buffer.from('28b52ffd2480cd0000900a78636f6e73756d65722d61fd073152564b0100ab6949027e5cd779', 'hex');

// The same request as a streaming compressor writes it (`zstd -3` from a pipe: no content size,
// a 2 MiB window, as tonic's encoder at the default level), with a content checksum.
const STREAMED_REQUEST = Buffer.from('28b52ffd0458cd0000900a78636f6e73756d65722d61fd073152564b0100ab6949027e5cd779', 'hex');
// Hostile frames of a few bytes: an empty last raw block (01 00 00) behind a header declaring...
/** ...a 1.875 GiB window (descriptor 0xA7: 2^30 + 7/8 of it), which a decoder allocates up front; */
const HUGE_WINDOW = Buffer.from('28b52ffd00a7010000', 'hex');
/** ...a single segment of 2 GiB content (8-byte content size 2^31). */
const HUGE_CONTENT = Buffer.from('28b52ffde00000008000000000010000', 'hex');

function call(body: Buffer, compressed: boolean): Promise<{ data: Buffer; status: string | undefined }> {
  const session = http2.connect(`http://${relay.server.address}`);
  const stream = session.request({
    ':method': 'POST',
    ':path': '/dynamo.kvrelay.v1.KvEventRelay/WatchKvPoolCatalog',
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-encoding': 'zstd',
  });
  const framed = Buffer.alloc(5 + body.length);
  framed.writeUInt8(compressed ? 1 : 0, 0);
  framed.writeUInt32BE(body.length, 1);
  body.copy(framed, 5);
  stream.end(framed);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let status: string | undefined;
    stream.on('response', (h) => (status = h['grpc-status'] as string | undefined));
    stream.on('trailers', (h) => (status = h['grpc-status'] as string | undefined));
    stream.on('data', (c: Buffer) => {
      chunks.push(c);
      const data = Buffer.concat(chunks);
      if (data.length >= 5 && data.length >= 5 + data.readUInt32BE(1)) {
        session.destroy();
        resolve({ data, status });
      }
    });
    stream.on('close', () => {
      session.destroy();
      resolve({ data: Buffer.concat(chunks), status });
    });
  });
}

test('a zstd-compressed request opens the stream like an uncompressed one', async () => {
  const { data } = await call(COMPRESSED_REQUEST, true);
  expect(data.readUInt8(0)).toBe(0); // responses go uncompressed
  const update = decodeMessage('KvPoolCatalogUpdate', data.subarray(5, 5 + data.readUInt32BE(1)));
  expect(update.revision).toBe(0n);
  expect(update.contractMarker).toBe(0x4b565231);
});

test('a corrupt zstd request ends the call with INTERNAL', async () => {
  const corrupt = Buffer.from(COMPRESSED_REQUEST);
  corrupt[8] ^= 0xff;
  const { data, status } = await call(corrupt, true);
  expect(data.length).toBe(0);
  expect(status).toBe('13');
});

test('a streamed zstd request (2 MiB window, no content size) is served under a small receive limit', async () => {
  const { data } = await call(STREAMED_REQUEST, true);
  const update = decodeMessage('KvPoolCatalogUpdate', data.subarray(5, 5 + data.readUInt32BE(1)));
  expect(update.contractMarker).toBe(0x4b565231);
});

test.each([
  ['a 1.875 GiB window', HUGE_WINDOW],
  ['a 2 GiB content size', HUGE_CONTENT],
  ['a huge window in a second frame', Buffer.concat([STREAMED_REQUEST, HUGE_WINDOW])],
])('a ~10-byte zstd request declaring %s is refused with RESOURCE_EXHAUSTED before decoding', async (_, frame) => {
  const { data, status } = await call(frame, true);
  expect(data.length).toBe(0);
  expect(status).toBe('8');
  // The relay still serves.
  expect((await call(COMPRESSED_REQUEST, true)).data.length).toBeGreaterThan(5);
});

describe('zstdFrameSizes', () => {
  test('reads the declared window and content size of every frame, skipping skippable frames', () => {
    const skippable = Buffer.from('5a2a4d1803000000abcdef', 'hex');
    expect(zstdFrameSizes(Buffer.concat([COMPRESSED_REQUEST, skippable, STREAMED_REQUEST, HUGE_WINDOW, HUGE_CONTENT]))).toEqual([
      { windowBytes: 128, contentBytes: 128 },
      { windowBytes: 2 ** 21, contentBytes: undefined },
      { windowBytes: 2 ** 30 + 7 * 2 ** 27, contentBytes: undefined },
      { windowBytes: 2 ** 31, contentBytes: 2 ** 31 },
    ]);
  });

  test.each([
    ['truncated header', HUGE_CONTENT.subarray(0, 8)],
    ['truncated block', COMPRESSED_REQUEST.subarray(0, 20)],
    ['missing checksum', STREAMED_REQUEST.subarray(0, STREAMED_REQUEST.length - 2)],
    ['bad magic', Buffer.from('28b52ffe00a7010000', 'hex')],
    ['reserved header bit', Buffer.from('28b52ffd08a7010000', 'hex')],
    ['reserved block type', Buffer.from('28b52ffd00a7070000', 'hex')],
    ['truncated skippable frame', Buffer.from('5a2a4d1809000000abcdef', 'hex')],
  ])('throws RangeError on a %s', (_, data) => {
    expect(() => zstdFrameSizes(data)).toThrow(RangeError);
  });
});

describe('extendDecompress (the grpc-js seam)', () => {
  test('internals of another shape are left alone and reported unsupported', () => {
    expect(extendDecompress(undefined)).toBe(false);
    const unchanged = { decompressMessage: 'not a function' };
    expect(extendDecompress(unchanged)).toBe(false);
    expect(unchanged.decompressMessage).toBe('not a function');
  });

  test('zstd is decoded within the receive limit; other encodings go to the original', async () => {
    const seen: string[] = [];
    const call = {
      maxReceiveMessageSize: 1024,
      decompressMessage(message: Buffer, encoding: string): Buffer {
        seen.push(encoding);
        return message;
      },
    };
    expect(extendDecompress(call)).toBe(true);
    const framed = Buffer.concat([Buffer.from([1, 0, 0, 0, COMPRESSED_REQUEST.length]), COMPRESSED_REQUEST]);
    const plain = (await call.decompressMessage(framed, 'zstd')) as Buffer;
    expect(decodeMessage('WatchKvPoolCatalogRequest', plain).subscriberId).toBe('consumer-a'.repeat(12));
    expect(seen).toEqual([]);
    expect(call.decompressMessage(framed, 'gzip')).toBe(framed);
    expect(seen).toEqual(['gzip']);
    call.maxReceiveMessageSize = 16;
    await expect(call.decompressMessage(framed, 'zstd')).rejects.toEqual({ code: 8, details: 'Received message that decompresses to a size larger than 16' });
  });
});
