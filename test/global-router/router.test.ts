// GlobalRouter over three real relays on loopback (gRPC servers over hand-built sources), each with a
// filter holding a known prefix of the prompt: the decision follows the replicas, readiness and
// load, and falls back when a replica is invalidated, requests to a DC fail, its relay goes silent
// (a WAN partition through a real TCP proxy) or a relay is lost.
import { GlobalRouter, kvAware, leastLoad, type Decision } from '../../examples/global-router/router';
import { waitReady } from '../../examples/global-router/router/ready';
import { DelayProxy } from '../../examples/global-router/sim/cluster/delay-proxy';
import { saltSeed, sequenceHashes } from '../../src/native/hashing';
import { DataStatus, ServingReadinessState } from '../../src/wire/enums';
import type { RelayServer } from '../../src/transport/server';
import { topologyEntry } from '../client/fixtures';
import { startRelay } from '../client/helpers';
import { insert } from '../client/query-fixture';
import { TestSource, testProducer, type TestPoolFeed } from '../support/test-source';
import { waitFor } from '../support/waitFor';

const BS = 64; // testDescriptor's block size
const TOKENS = Uint32Array.from({ length: 8 * BS + 5 }, (_, i) => 500 + i);
const HASHES = sequenceHashes(TOKENS, BS, false, saltSeed(null, null));
const REQUEST = { model: 'llama', tokens: TOKENS };
/** Generous: the machine may be shared. */
const WAIT_MS = 20_000;
/** For tests that route at a future time to pass a hold: no relay's windows arrive in the future, which must not read as silence. */
const NEVER_SILENT = 1_000_000;

interface Dc {
  name: string;
  source: TestSource;
  feed: TestPoolFeed;
  server: RelayServer;
}

async function startDc(name: string, pool: number, depth: number): Promise<Dc> {
  const source = new TestSource();
  const feed = source.attachPool(testProducer({ pool, bucketCount: 1024 }));
  feed.publish(insert(feed.words, HASHES.subarray(0, depth)));
  source.setReadiness([topologyEntry('llama', ServingReadinessState.READY, 'dynamo')]);
  return { name, source, feed, server: await startRelay(source, { timing: { loadWindowMs: 20 } }) };
}

describe('GlobalRouter over three relays', () => {
  let dcs: Dc[];
  let router: GlobalRouter | undefined;

  beforeEach(async () => {
    // Cached prefix of the prompt: dc-a 2 blocks, dc-b 6, dc-c none.
    dcs = [await startDc('dc-a', 1, 2), await startDc('dc-b', 2, 6), await startDc('dc-c', 3, 0)];
  });

  afterEach(async () => {
    router?.close();
    router = undefined;
    await Promise.all(dcs.map((dc) => dc.server.shutdown()));
  });

  async function connect(options: Partial<ConstructorParameters<typeof GlobalRouter>[0]> = {}, via: Record<string, string> = {}): Promise<GlobalRouter> {
    router = new GlobalRouter({
      dcs: dcs.map((dc) => ({ name: dc.name, address: via[dc.name] ?? dc.server.address })),
      subscriberId: 'router-test',
      client: { backoff: { initialMs: 20, maxMs: 200 } },
      ...options,
    });
    router.start();
    expect(await waitReady(router, 'llama', WAIT_MS)).toEqual([]);
    return router;
  }

  /** A decision that is released at once (polling must not pile up in-flight requests). */
  const peek = (r: GlobalRouter) => {
    const d = r.route(REQUEST);
    d.release();
    return d.chosen;
  };

  const depths = (d: Decision) => Object.fromEntries(d.candidates.map((c) => [c.dc, c.matchedTokens]));

  it('routes to the DC with the deepest cached prefix, scoring every DC from its own replica', async () => {
    const r = await connect();
    const d = r.route(REQUEST);
    expect(depths(d)).toEqual({ 'dc-a': 2 * BS, 'dc-b': 6 * BS, 'dc-c': 0 });
    expect(d.chosen).toMatchObject({ dc: 'dc-b', endpoint: 'dynamo.backend.generate', promptTokens: TOKENS.length, lastResort: false });
    expect(d.skipped).toEqual([]);
  });

  it('follows new deltas: a prefix stored in another DC moves the decision', async () => {
    const r = await connect();
    const c = dcs[2];
    c.feed.publish(insert(c.feed.words, HASHES));
    await waitFor(() => peek(r)?.dc === 'dc-c', 'dc-c to hold the whole prompt', WAIT_MS);
    expect(depths(r.route(REQUEST))['dc-c']).toBe(8 * BS);
  });

  it('books each decision until its first token and release, so queued prefill pulls traffic off a cached DC', async () => {
    const r = await connect({ policy: kvAware({ prefillTokensPerMs: 1, random: () => 0 }) });
    // Uncached tokens: dc-a 517 − 128 = 389, dc-b 517 − 384 = 133, dc-c 517. Each decision queues its
    // uncached tokens at its DC until the first token: b (133), b (133 + 133 = 266), then a (389 < 399).
    const decisions = [r.route(REQUEST), r.route(REQUEST), r.route(REQUEST)];
    expect(decisions.map((d) => d.chosen?.dc)).toEqual(['dc-b', 'dc-b', 'dc-a']);
    expect([r.inflight('dc-a'), r.inflight('dc-b'), r.inflight('dc-c')]).toEqual([1, 2, 0]);
    // The candidates are what the router knew before booking this (fourth) request, which goes to dc-b too.
    expect(r.route(REQUEST).candidates.find((c) => c.dc === 'dc-b')).toMatchObject({ pendingPrefillTokens: 2 * 133, awaitingFirstToken: 2, inflight: 2 });
    decisions[0].firstToken();
    decisions[0].firstToken(); // idempotent
    const after = r.route(REQUEST);
    expect(after.candidates.find((c) => c.dc === 'dc-b')).toMatchObject({ pendingPrefillTokens: 2 * 133, awaitingFirstToken: 2, inflight: 3 });
    decisions[0].release();
    decisions[0].release(); // idempotent
    expect(r.inflight('dc-b')).toBe(3); // the fourth and fifth are still in flight
    after.release();
    expect(r.inflight('dc-b')).toBe(2);
  });

  it('uses the capacity and KV usage the relays publish', async () => {
    const b = dcs[1];
    b.source.servingLoadState = { pools: [{ producer: b.feed.producer, load: { tokens: {}, status: DataStatus.UNAVAILABLE, sourceObservedMs: 0n }, deployment: { liveWorkers: 1n, maxConcurrency: 3n } }], models: [] };
    b.source.poolLoadState = { pools: [{ producer: b.feed.producer, kvUsedBlocks: 90n, totalKvBlocks: 100n, kvObservedRanks: 1, kvExpectedRanks: 1 }] };
    const r = await connect();
    await waitFor(() => r.client('dc-b').servingLoad()?.pools.size === 1 && r.client('dc-b').load()?.pools.size === 1, 'dc-b load windows', WAIT_MS);
    const d = r.route(REQUEST);
    expect(d.candidates.find((c) => c.dc === 'dc-b')).toMatchObject({ capacity: 3, kvUsage: 0.9, ranks: 1 });
    // b: 133 tokens / (1 − 0.9) = 1330 > a: 389 → a.
    expect(d.chosen?.dc).toBe('dc-a');
  });

  it('skips a pool whose readiness is not READY', async () => {
    const r = await connect();
    dcs[1].source.setReadiness([topologyEntry('llama', ServingReadinessState.UNAVAILABLE, 'dynamo')]);
    await waitFor(() => peek(r)?.dc === 'dc-a', 'dc-b to be unavailable', WAIT_MS);
    expect(r.route(REQUEST).skipped).toEqual([expect.objectContaining({ dc: 'dc-b', reason: 'readiness UNAVAILABLE' })]);
  });

  it('holds a DC whose replica was invalidated as a last resort until the replica is back', async () => {
    const r = await connect({ invalidReplicaHoldMs: 60_000, silenceWindows: NEVER_SILENT });
    const seen: Decision[] = [];
    const held = new Promise<void>((resolve) =>
      r.on('replicaInvalidated', (dc) => {
        if (dc !== 'dc-b') return;
        seen.push(r.route(REQUEST), r.route(REQUEST, Date.now() + 60_001));
        resolve();
      }),
    );
    dcs[1].feed.publishOutOfSequence(); // a producer bug: the client drops the replica and resubscribes
    await held;
    const [during, afterHold] = seen;
    expect(during.chosen?.dc).toBe('dc-a');
    expect(during.candidates.find((c) => c.dc === 'dc-b')).toMatchObject({ lastResort: 'replicaInvalidated', matchedTokens: null });
    // Past the hold the DC competes again, with an unknown depth counted as nothing cached.
    expect(afterHold.candidates.find((c) => c.dc === 'dc-b')).toMatchObject({ lastResort: false, matchedTokens: null });
    for (const d of seen) d.release(); // probes: their queued prefill must not weigh on what follows
    // The relay's catalog refresh (here: the same producer re-attached) lets the client resubscribe.
    const b = dcs[1];
    const refreshed = b.source.attachPool(b.feed.producer);
    refreshed.publish(insert(refreshed.words, HASHES.subarray(0, 6)));
    await waitFor(() => peek(r)?.dc === 'dc-b', 'the reinstalled replica to win again', WAIT_MS);
    expect(peek(r)).toMatchObject({ lastResort: false, matchedTokens: 6 * BS });
  });

  it('uses a held DC when nothing else is eligible', async () => {
    const r = await connect({ invalidReplicaHoldMs: 60_000 });
    const only = new Promise<Decision>((resolve) =>
      r.on('replicaInvalidated', (dc) => {
        if (dc === 'dc-b') resolve(r.route(REQUEST));
      }),
    );
    for (const dc of [dcs[0], dcs[2]]) dc.source.setReadiness([topologyEntry('llama', ServingReadinessState.UNAVAILABLE, 'dynamo')]);
    const eligible = () => {
      const d = r.route(REQUEST);
      d.release();
      return d.candidates.length;
    };
    await waitFor(() => eligible() === 1, 'dc-a and dc-c to be unavailable', WAIT_MS);
    dcs[1].feed.publishOutOfSequence();
    expect((await only).chosen).toMatchObject({ dc: 'dc-b', lastResort: 'replicaInvalidated' });
  });

  it('takes a DC whose requests failed as a last resort for the hold, probes it once after, and trusts it again on a first token', async () => {
    const r = await connect({ failureHoldMs: 60_000, silenceWindows: NEVER_SILENT });
    const b = (d: Decision) => d.candidates.find((c) => c.dc === 'dc-b');
    const finished = r.route(REQUEST);
    finished.firstToken();
    finished.release();
    finished.fail(); // after its end: not a failure of the DC
    expect(peek(r)).toMatchObject({ dc: 'dc-b', lastResort: false });
    const failed = r.route(REQUEST);
    expect(failed.chosen?.dc).toBe('dc-b');
    failed.fail(); // connection refused, reset or timed out
    failed.fail(); // idempotent
    expect(r.inflight('dc-b')).toBe(0);
    const during = r.route(REQUEST);
    during.release();
    expect(during.chosen?.dc).toBe('dc-a');
    expect(b(during)).toMatchObject({ lastResort: 'failing', matchedTokens: 6 * BS });
    // Past the hold one request probes it; the others keep away until the probe answers.
    const later = Date.now() + 60_001;
    const probe = r.route(REQUEST, later);
    expect(probe.chosen).toMatchObject({ dc: 'dc-b', lastResort: false });
    const whileProbing = r.route(REQUEST, later);
    whileProbing.release();
    expect(whileProbing.chosen?.dc).toBe('dc-a');
    expect(b(whileProbing)).toMatchObject({ lastResort: 'failing' });
    probe.firstToken();
    probe.release();
    expect(peek(r)).toMatchObject({ dc: 'dc-b', lastResort: false });
    // A new failure holds it again.
    r.route(REQUEST).fail();
    const again = r.route(REQUEST);
    again.release();
    expect(again.chosen?.dc).toBe('dc-a');
  });

  it('takes a DC whose relay went silent (its streams held by a WAN partition) as a last resort until a window arrives', async () => {
    const proxy = await DelayProxy.start({ target: dcs[1].server.address, delayMs: 0 });
    try {
      const r = await connect({}, { 'dc-b': proxy.address });
      const b = () => {
        const d = r.route(REQUEST);
        d.release();
        return { chosen: d.chosen?.dc, b: d.candidates.find((c) => c.dc === 'dc-b') };
      };
      expect(b()).toMatchObject({ chosen: 'dc-b', b: { lastResort: false } });
      // Silence is judged at the client's floor (3 s), not after 3 of these 20 ms windows: a window
      // a second late (a busy host) is no partition.
      const bAt = (laterMs: number) => {
        const d = r.route(REQUEST, Date.now() + laterMs);
        d.release();
        return d.candidates.find((c) => c.dc === 'dc-b')?.lastResort;
      };
      expect(bAt(1_000)).toBe(false);
      expect(bAt(3_500)).toBe('silent');
      proxy.setPartitioned(true); // the TCP connection stays up; nothing crosses
      await waitFor(() => b().chosen === 'dc-a', 'dc-b to go silent', WAIT_MS);
      expect(b()).toMatchObject({ chosen: 'dc-a', b: { lastResort: 'silent', matchedTokens: 6 * BS } });
      // The client ends the silent load stream itself and reopens it (held too): still silent.
      await waitFor(() => r.client('dc-b').load() === undefined, 'the client to end the silent load stream', WAIT_MS);
      expect(b()).toMatchObject({ chosen: 'dc-a', b: { lastResort: 'silent' } });
      proxy.setPartitioned(false);
      await waitFor(() => b().chosen === 'dc-b', 'dc-b to be heard again', WAIT_MS);
      expect(b()).toMatchObject({ b: { lastResort: false } });
    } finally {
      router?.close();
      router = undefined;
      await proxy.close();
    }
  });

  it('stops routing to a DC whose relay is gone, and routes nowhere when every relay is', async () => {
    const r = await connect();
    await dcs[1].server.shutdown();
    await waitFor(() => r.client('dc-b').catalog() === undefined, 'dc-b catalog to be dropped', WAIT_MS);
    const d = r.route(REQUEST);
    expect(d.chosen?.dc).toBe('dc-a');
    expect(d.skipped).toEqual([{ dc: 'dc-b', reason: 'noCatalog' }]);
    await Promise.all([dcs[0].server.shutdown(), dcs[2].server.shutdown()]);
    await waitFor(() => r.dcNames().every((dc) => r.client(dc).catalog() === undefined), 'every catalog to be dropped', WAIT_MS);
    const none = r.route(REQUEST);
    expect(none.chosen).toBeNull();
    expect(none.skipped.map((s) => s.reason)).toEqual(['noCatalog', 'noCatalog', 'noCatalog']);
    none.release(); // harmless
  });

  it('does not hash the prompt for a policy that ignores the cache', async () => {
    const r = await connect({ policy: leastLoad({ random: () => 0 }) });
    const d = r.route(REQUEST);
    expect(depths(d)).toEqual({ 'dc-a': null, 'dc-b': null, 'dc-c': null });
    expect(d.chosen?.dc).toBe('dc-a');
  });

  it('rejects bad options', () => {
    expect(() => new GlobalRouter({ dcs: [], subscriberId: 'x' })).toThrow(RangeError);
    const two = [{ name: 'a', address: '127.0.0.1:1' }, { name: 'a', address: '127.0.0.1:2' }];
    expect(() => new GlobalRouter({ dcs: two, subscriberId: 'x' })).toThrow(/unique/);
    expect(() => new GlobalRouter({ dcs: two.slice(0, 1), subscriberId: 'x', defaultCapacity: 0 })).toThrow(RangeError);
    expect(() => new GlobalRouter({ dcs: two.slice(0, 1), subscriberId: 'x', failureHoldMs: 0 })).toThrow(RangeError);
    expect(() => new GlobalRouter({ dcs: two.slice(0, 1), subscriberId: 'x', silenceWindows: -1 })).toThrow(RangeError);
  });
});

