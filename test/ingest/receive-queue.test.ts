// The SUB socket's receive queue is bounded in bytes: an engine publishing faster than the relay reads
// can queue at most INGEST_RECEIVE_HWM messages of up to INGEST_MAX_MESSAGE_BYTES in the relay; libzmq
// then stops reading the connection, the backlog waits in the engine's own PUB queue, what overflows
// there is lost and the relay sees a gap. A publisher on a worker thread sends a burst of 1 MiB
// messages while this thread — where the subscriber's receive loop runs — is blocked.
import { Worker } from 'worker_threads';
import { INGEST_MAX_MESSAGE_BYTES, INGEST_RECEIVE_HWM, INGEST_RECEIVE_QUEUE_BYTES } from '../../src/config/defaults';
import { KvEventSubscriber } from '../../src/ingest/subscriber';
import { encodeBatch } from '../../src/sim/encode';
import { RecordingSink } from '../support/recording-sink';
import { waitFor } from '../support/waitFor';

const MESSAGE_BYTES = 1024 * 1024;
/**
 * Far more than the relay may queue (32), the publisher's queue (16) and the kernel's socket buffers
 * (here up to 32 + 4 MiB) hold together; paced so that a relay reading along would miss none.
 */
const BURST = 250;
const PACE_MS = 10;

// The engine: a PUB with a small queue. Sends a small valid batch every 20 ms; on 'go' a paced burst
// of undecodable 1 MiB payloads (each one the relay reads counts as malformed), then signals `done`;
// small batches again until 'stop', then closes its socket and says 'closed'.
const PUBLISHER = `
const { parentPort, workerData } = require('worker_threads');
const { Publisher } = require(workerData.zeromq);
const { burst, bytes, small, done, paceMs } = workerData;
const pub = new Publisher({ sendHighWaterMark: 16, linger: 0 });
const flag = new Int32Array(done);
let seq = 0n;
let phase = 'small';
const frames = (payload) => { const s = Buffer.alloc(8); s.writeBigUInt64BE(seq++); return [Buffer.alloc(0), s, payload]; };
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
parentPort.on('message', (m) => { phase = m; });
(async () => {
  await pub.bind('tcp://127.0.0.1:*');
  parentPort.postMessage(pub.lastEndpoint);
  const big = Buffer.alloc(bytes, 0xc1);
  while (phase !== 'stop') {
    if (phase === 'go') {
      for (let i = 0; i < burst; i++) { await pub.send(frames(big)); await pause(paceMs); }
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
      if (phase === 'go') phase = 'small'; // a 'stop' sent meanwhile stands
    }
    await pub.send(frames(Buffer.from(small)));
    await pause(20);
  }
  pub.close();
  parentPort.postMessage('closed');
})();
`;

let worker: Worker | undefined;
let sub: KvEventSubscriber | undefined;
afterEach(async () => {
  const w = worker;
  // zeromq.js aborts the process when a thread ends with a socket still open or a send pending
  // (zeromq.js #411): the worker is terminated only once its publisher closed (or it exited).
  const closed = w && new Promise<void>((resolve) => w.on('message', (m) => m === 'closed' && resolve()).once('exit', () => resolve()));
  w?.postMessage('stop');
  await sub?.close();
  await closed;
  await w?.terminate();
  worker = sub = undefined;
});

test('a relay that stops reading queues a bounded number of bytes; the engine-side overflow shows as a gap', async () => {
  expect(INGEST_RECEIVE_HWM * INGEST_MAX_MESSAGE_BYTES).toBeLessThanOrEqual(INGEST_RECEIVE_QUEUE_BYTES);
  const done = new SharedArrayBuffer(4);
  const small = encodeBatch(0, [{ type: 'AllBlocksCleared' }], 0, { events: 'map' });
  worker = new Worker(PUBLISHER, { eval: true, workerData: { zeromq: require.resolve('zeromq'), burst: BURST, bytes: MESSAGE_BYTES, small, done, paceMs: PACE_MS } });
  const endpoint = await new Promise<string>((resolve, reject) => worker!.once('message', resolve).once('error', reject));
  sub = new KvEventSubscriber(
    { workerId: 1n, dpSize: 1, dpStartRank: 0, endpoint, topic: '', mode: 'connect', kvBlockSize: 4, eagle: false },
    new RecordingSink(),
    { logger: { warn: () => {} } },
  );
  await sub.start();
  const stats = () => sub!.stats()[0];
  await waitFor(() => stats().events > 0, 'the first small batches', 15_000);
  expect(stats()).toMatchObject({ gaps: 0, malformed: 0 });

  worker.postMessage('go');
  // Block this thread (and the receive loop on it) until the whole burst was sent.
  expect(Atomics.wait(new Int32Array(done), 0, 0, 60_000)).not.toBe('timed-out');

  // The small batches after the burst arrive; the first one past the hole reports it, after every
  // burst message that was queued before the hole.
  await waitFor(() => stats().gaps > 0, 'a gap where the engine dropped what the relay would not queue', 30_000);
  const delivered = stats().malformed;
  // At most the relay's queue, plus what the engine's queue and the kernel's socket buffers held.
  expect(delivered).toBeGreaterThan(0);
  expect(delivered).toBeLessThan(BURST / 2);
}, 120_000);
