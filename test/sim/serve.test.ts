// SimulatedEngine.serve(rank, prompt): a routed request's prompt reuses the rank's resident prefix,
// stores the rest under one parent chain, and publishes exactly that over ZMQ.
import { Subscriber } from 'zeromq';
import { decode } from 'msgpackr';
import { SimulatedEngine } from '../../src/sim';

describe('SimulatedEngine.serve', () => {
  let engine: SimulatedEngine | undefined;
  afterEach(async () => {
    await engine?.stop();
    engine = undefined;
  });

  it('stores complete blocks once, reuses them next time, and publishes the stores', async () => {
    engine = await new SimulatedEngine({ http: false, replay: false, workload: { blockSize: 4, capacityBlocks: 64, maxConversationBlocks: 1, systemPromptBlocks: 1 } }).start();
    const sub = new Subscriber({ linger: 0 });
    sub.connect(engine.pubEndpoint);
    sub.subscribe();
    await engine.waitForSubscribers();

    const w = engine.workload;
    const first = w.prompt(Array.from({ length: 10 }, (_, i) => i)); // 2 complete blocks; the tail of 2 is never cached
    expect(first.blocks).toEqual([[0, 1, 2, 3], [4, 5, 6, 7]]);
    expect(await engine.serve(0, first)).toBe(0);
    expect(w.residentPrefix(0, first)).toBe(2);

    const longer = w.prompt(Array.from({ length: 16 }, (_, i) => i));
    expect(longer.hashes.slice(0, 2)).toEqual(first.hashes);
    expect(await engine.serve(0, longer)).toBe(2);
    expect(await engine.serve(0, longer)).toBe(4); // nothing new: nothing published

    const batches = [];
    for (let i = 0; i < 2; i++) {
      const [, , payload] = await sub.receive();
      batches.push(decode(payload) as [number, unknown[][], number]);
    }
    sub.close();
    const stored = batches.map(([, events]) => events[0]);
    expect(stored.map((e) => [e[0], (e[1] as unknown[]).length, e[3]])).toEqual([
      ['BlockStored', 2, [0, 1, 2, 3, 4, 5, 6, 7]],
      ['BlockStored', 2, [8, 9, 10, 11, 12, 13, 14, 15]],
    ]);
    expect(stored[1][2]).toEqual((stored[0][1] as unknown[])[1]); // parent = the last block stored before
  });

  it('evicts least-recently-used blocks under capacity', () => {
    engine = new SimulatedEngine({ dpSize: 2, http: false, workload: { blockSize: 2, capacityBlocks: 4, maxConversationBlocks: 1, systemPromptBlocks: 1 } });
    const w = engine.workload;
    const a = w.prompt([1, 2, 3, 4]);
    const b = w.prompt([5, 6, 7, 8]);
    const c = w.prompt([9, 10, 11, 12]);
    w.serve(0, a);
    w.serve(0, b);
    const { events } = w.serve(0, c);
    expect(events[0]).toMatchObject({ type: 'BlockRemoved' });
    expect(w.residentPrefix(0, a)).toBe(0);
    expect(w.residentPrefix(0, b)).toBe(2);
    expect(w.residentPrefix(0, c)).toBe(2);
    expect(w.residentPrefix(1, c)).toBe(0); // ranks do not share a cache
  });
});
