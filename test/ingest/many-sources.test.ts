// One relay process holds a thousand KV sources and more: libzmq's default limit of 1023 sockets per
// context is raised, so the next subscriber is created instead of failing "Too many open files".
import { KvEventSubscriber, type IngestSink } from '../../src/ingest';

const SOURCES = 1_030;

test(`${SOURCES} bound KV-event subscribers start and close`, async () => {
  const sink: IngestSink = { events: () => undefined, reset: () => undefined };
  const subscribers: KvEventSubscriber[] = [];
  try {
    for (let i = 0; i < SOURCES; i++) {
      const s = new KvEventSubscriber({ workerId: BigInt(i + 1), dpSize: 1, dpStartRank: 0, endpoint: 'tcp://127.0.0.1:0', topic: '', mode: 'bind', kvBlockSize: 16, eagle: false }, sink);
      subscribers.push(s);
      await s.start();
    }
    expect(subscribers.every((s) => /^tcp:\/\/127\.0\.0\.1:\d+$/.test(s.endpoints()[0]) && !s.endpoints()[0].endsWith(':0'))).toBe(true);
  } finally {
    await Promise.all(subscribers.map((s) => s.close()));
  }
});
