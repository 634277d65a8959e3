// One relay process holds a thousand KV sources and more: ingest opens its sockets on a context of
// its own whose limit is raised above libzmq's default of 1023, so the next subscriber is created
// instead of failing "Too many open files", whatever else in the process opened sockets first.
import { Publisher } from 'zeromq';
import type { IngestSink, KvEventSubscriber } from '../../src/ingest';

const SOURCES = 1_030;

test(`${SOURCES} bound KV-event subscribers start and close after another socket started the global context`, async () => {
  // libzmq fixes a context's socket limit when its first socket opens: this one freezes the global
  // context's at 1023 (each bound rank takes two sockets, its SUB and its event observer).
  const other = new Publisher({ linger: 0 });
  await other.bind('tcp://127.0.0.1:*');
  // Loaded only now, as in a process where another module's socket came first.
  const ingest = await import('../../src/ingest');
  const sink: IngestSink = { events: () => undefined, reset: () => undefined };
  const subscribers: KvEventSubscriber[] = [];
  try {
    for (let i = 0; i < SOURCES; i++) {
      const s = new ingest.KvEventSubscriber({ workerId: BigInt(i + 1), dpSize: 1, dpStartRank: 0, endpoint: 'tcp://127.0.0.1:0', topic: '', mode: 'bind', kvBlockSize: 16, eagle: false }, sink);
      subscribers.push(s);
      await s.start();
    }
    expect(subscribers.every((s) => /^tcp:\/\/127\.0\.0\.1:\d+$/.test(s.endpoints()[0]) && !s.endpoints()[0].endsWith(':0'))).toBe(true);
  } finally {
    await Promise.all(subscribers.map((s) => s.close()));
    other.close();
  }
});
