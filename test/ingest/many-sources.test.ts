// One relay process holds more KV sources than libzmq's default context allows: ingest's native
// context raises the socket limit (1023 by default) to INGEST_MAX_ZMQ_SOCKETS, so the next
// subscriber is created instead of failing "Too many open files". A bound rank takes three sockets
// (its SUB, the monitor's PAIR and the PAIR reading it) and four descriptors (those three and its
// listener): 600 ranks are 1 800 sockets, well past the default, in ~2 400 descriptors, which fits
// the 4 096 a CI container may allow a process. An operator running thousands of sources raises
// `ulimit -n` (README "Operations").
import { KvEventSubscriber, type IngestSink } from '../../src/ingest';

const SOURCES = 600;
const LIBZMQ_DEFAULT_MAX_SOCKETS = 1023;

test(`${SOURCES} bound KV-event subscribers (${3 * SOURCES} sockets) start and close on one context`, async () => {
  expect(2 * SOURCES).toBeGreaterThan(LIBZMQ_DEFAULT_MAX_SOCKETS);
  const sink: IngestSink = { events: () => undefined, reset: () => undefined };
  const subscribers: KvEventSubscriber[] = [];
  try {
    for (let i = 0; i < SOURCES; i++) {
      const s = new KvEventSubscriber({ workerId: BigInt(i + 1), dpSize: 1, dpStartRank: 0, endpoint: 'tcp://127.0.0.1:0', topic: '', mode: 'bind', allowAnyPeer: true, kvBlockSize: 16, eagle: false }, sink);
      subscribers.push(s);
      await s.start();
    }
    expect(subscribers.every((s) => /^tcp:\/\/127\.0\.0\.1:\d+$/.test(s.endpoints()[0]) && !s.endpoints()[0].endsWith(':0'))).toBe(true);
  } finally {
    await Promise.all(subscribers.map((s) => s.close()));
  }
});
