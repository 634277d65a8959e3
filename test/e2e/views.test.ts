// Control-plane views end to end: serving readiness follows the engines' real /health answers, and
// pool load follows what their /metrics report per data-parallel rank, as a consumer sees them.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import type { KvPoolLoadEntry, TopologyEntry } from '../../src/wire/types';
import { waitFor } from '../support/waitFor';
import { DEADLINE_MS, E2e, endpointConfig, metricValue, relayConfig, workerConfig } from './harness';

let run: E2e;
beforeEach(() => (run = new E2e()));
afterEach(() => run.close());

function llamaEntry(): TopologyEntry | undefined {
  return run.client.readiness()?.entries.find((e) => e.namespace === 'prod' && e.canonicalModelId === 'llama');
}

test('P/D readiness flips with the prefill engine health', async () => {
  const prefill = await run.engine();
  const decode = await run.engine();
  await run.start(
    relayConfig([
      endpointConfig([workerConfig(10, prefill, { health: true })], { component: 'prefill', workerType: 'prefill', needs: [['decode']] }),
      endpointConfig([workerConfig(11, decode, { health: true })], { component: 'decode', workerType: 'decode', needs: [['prefill']] }),
    ]),
  );
  const state = (): number | undefined => llamaEntry()?.state;
  await waitFor(() => state() === ServingReadinessState.READY, 'READY with both engines healthy', DEADLINE_MS);
  expect(llamaEntry()).toMatchObject({ presentRoles: [WorkerRole.PREFILL, WorkerRole.DECODE], missingRoles: [] });
  expect(llamaEntry()!.members).toHaveLength(2);

  prefill.setHealthStatus(503);
  // On a loaded machine the decode engine's probe can time out too for a moment (UNAVAILABLE for
  // another reason): wait for the state this fault makes, then check all of it.
  await waitFor(() => state() === ServingReadinessState.UNAVAILABLE && llamaEntry()!.presentRoles.join() === `${WorkerRole.DECODE}`, 'UNAVAILABLE with only DECODE present once prefill answers 503', DEADLINE_MS);
  expect(llamaEntry()).toMatchObject({ presentRoles: [WorkerRole.DECODE], missingRoles: [WorkerRole.PREFILL] });
  const q = run.client.query({ model: 'llama', tokens: [1, 2, 3, 4] });
  expect(q.kind === 'ok' && q.pools.map((p) => p.readiness)).toEqual(['UNAVAILABLE', 'UNAVAILABLE']);

  prefill.setHealthStatus(200);
  await waitFor(() => state() === ServingReadinessState.READY, 'READY again once prefill answers 200', DEADLINE_MS);
  expect(llamaEntry()).toMatchObject({ presentRoles: [WorkerRole.PREFILL, WorkerRole.DECODE], missingRoles: [] });

  // After a first answer, a refused connection means not live (not unknown).
  await prefill.stop();
  await waitFor(() => state() === ServingReadinessState.UNAVAILABLE, 'UNAVAILABLE once prefill is gone', DEADLINE_MS);
  expect(llamaEntry()).toMatchObject({ presentRoles: [WorkerRole.DECODE], missingRoles: [WorkerRole.PREFILL] });
});

test('until a worker\'s health first answers the entry is UNKNOWN; then its answers decide', async () => {
  const prefill = await run.engine();
  const decode = await run.engine();
  // A health endpoint that accepts connections and holds them unanswered until told to answer.
  let status: number | undefined;
  let requests = 0;
  const held: ServerResponse[] = [];
  const health = createServer((_req, res) => {
    requests += 1;
    if (status === undefined) held.push(res);
    else res.writeHead(status).end();
  });
  await new Promise<void>((resolve) => health.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(health.address() as AddressInfo).port}/health`;
    await run.start(
      relayConfig([
        endpointConfig([{ ...workerConfig(10, prefill), health: { url } }], { component: 'prefill', workerType: 'prefill', needs: [['decode']] }),
        endpointConfig([workerConfig(11, decode, { health: true })], { component: 'decode', workerType: 'decode', needs: [['prefill']] }),
      ]),
    );
    // Unanswered probes (a timeout is not an answer) leave it not authoritative; by the third
    // request the first has long timed out, and any state it caused would have been published.
    await waitFor(() => requests >= 3 && llamaEntry() !== undefined, 'three unanswered prefill probes', DEADLINE_MS);
    expect(llamaEntry()!.state).toBe(ServingReadinessState.UNKNOWN);

    status = 200;
    await waitFor(() => llamaEntry()?.state === ServingReadinessState.READY, 'READY once prefill answers 200', DEADLINE_MS);
    status = 500;
    await waitFor(() => llamaEntry()?.state === ServingReadinessState.UNAVAILABLE, 'UNAVAILABLE once prefill answers 500', DEADLINE_MS);
    expect(llamaEntry()).toMatchObject({ missingRoles: [WorkerRole.PREFILL] });
  } finally {
    for (const res of held) res.destroy();
    health.closeAllConnections();
    await new Promise<void>((resolve) => health.close(() => resolve()));
  }
});

/** A metrics endpoint in front of the engine's that can hide one rank's sample. */
class MetricsFilter {
  hideRank: number | undefined;
  private readonly server: Server;

  constructor(private readonly upstream: string) {
    this.server = createServer((_req, res) => {
      void (async () => {
        const text = await (await fetch(this.upstream)).text();
        const hidden = this.hideRank === undefined ? undefined : `engine="${this.hideRank}"`;
        const body = text.split('\n').filter((l) => hidden === undefined || !l.includes(hidden)).join('\n');
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(body);
      })().catch(() => res.writeHead(502).end());
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/metrics`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function startLoadScenario(metricsUrl: (engineMetrics: string) => Promise<string>): Promise<() => KvPoolLoadEntry | undefined> {
  const engine = await run.engine({ dpSize: 2 });
  engine.setGauges(0, { kvCacheUsage: 0.25 });
  engine.setGauges(1, { kvCacheUsage: 0.5 });
  const url = await metricsUrl(`${engine.httpUrl}/metrics`);
  await run.start(relayConfig([endpointConfig([workerConfig(7, engine, { metrics: url, totalKvBlocks: 100 })])]));
  await run.poolKey();
  return () => {
    const pool = run.client.catalog()?.pools[0];
    return pool && run.client.load()?.pools.get(pool.producerKey);
  };
}

test('load coverage complete: both ranks observed, usage summed over ranks', async () => {
  const entry = await startLoadScenario(async (url) => url);
  await waitFor(() => entry()?.kvObservedRanks === 2, 'both ranks observed', DEADLINE_MS);
  // round(0.25 × 100) + round(0.5 × 100) of 2 × 100 blocks.
  expect(entry()).toMatchObject({ kvUsedBlocks: 75n, totalKvBlocks: 200n, kvObservedRanks: 2, kvExpectedRanks: 2 });
  expect(run.client.load()!.windowMs).toBe(200n);
  expect(metricValue(await run.metricsText(), 'kv_dc_relay_degraded_load_coverage_pool_count', '')).toBe(0);
});

test('load coverage partial: a rank missing from the metrics is not observed, and no partial sum is served', async () => {
  let filter: MetricsFilter | undefined;
  try {
    const entry = await startLoadScenario(async (url) => {
      filter = new MetricsFilter(url);
      return filter.listen();
    });
    await waitFor(() => entry()?.kvObservedRanks === 2, 'both ranks observed first', DEADLINE_MS);

    // Rank 1's sample disappears: coverage drops to 1/2 instead of keeping rank 1's last value.
    filter!.hideRank = 1;
    await waitFor(() => entry()?.kvObservedRanks === 1, 'rank 1 no longer observed', DEADLINE_MS);
    // identity-topology-load.md §4.1: kv_used_blocks is published only for complete coverage (0 on
    // the wire otherwise, with observed < expected); capacity is still known for both ranks.
    expect(entry()).toMatchObject({ kvUsedBlocks: 0n, totalKvBlocks: 200n, kvObservedRanks: 1, kvExpectedRanks: 2 });
    expect(metricValue(await run.metricsText(), 'kv_dc_relay_degraded_load_coverage_pool_count', '')).toBe(1);
    const q = run.client.query({ model: 'llama', tokens: [1, 2, 3, 4] });
    expect(q.kind === 'ok' && q.pools[0].load).toMatchObject({ kvObservedRanks: 1, kvExpectedRanks: 2 });

    filter!.hideRank = undefined;
    await waitFor(() => entry()?.kvObservedRanks === 2, 'rank 1 observed again', DEADLINE_MS);
    expect(entry()!.kvUsedBlocks).toBe(75n);
  } finally {
    await filter?.close();
  }
});
