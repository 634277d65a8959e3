// A Dynamo serving endpoint's pool binds (is served) only while one of its ranks has an Active KV event
// source at its KV-state endpoint, where that endpoint has v1/event_sources entries (identity-topology-
// load.md §5.2, Dynamo's desired_actor_binding); serving readiness keeps the endpoint meanwhile, without
// a pool. The KV-state endpoint is the card's runtime_config.kv_state_endpoint (or the serving endpoint
// where it is omitted); a malformed one rejects the card. Real etcd, ZMQ, relay and consumer.
import { Etcd3 } from 'etcd3';
import { ServingReadinessState } from '../../src/wire/enums';
import { E2e, expectedHashes, metricValue, tokenRange } from '../e2e/harness';
import { DynamoWorker } from '../support/dynamo-worker';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { relayConfig } from '../support/relay-config';
import { waitFor } from '../support/waitFor';

const BS = 4;
const card = (runtime: Record<string, unknown> = {}, name = 'llama') => ({
  display_name: name,
  kv_cache_block_size: BS,
  model_type: 'Chat',
  worker_type: 'aggregated',
  needs: [],
  runtime_config: { total_kv_blocks: 100, ...runtime },
});

describeWithEtcd('Dynamo pools bind to their Active KV event sources (real etcd, ZMQ, relay and consumer)', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  let run: E2e;
  const workers: DynamoWorker[] = [];

  beforeEach(async () => {
    etcd = await new EtcdServer().start();
    kv = new Etcd3({ hosts: etcd.endpoint });
    run = new E2e();
  });
  afterEach(async () => {
    await run.close();
    await Promise.all(workers.splice(0).map((w) => w.close()));
    kv.close();
    await etcd.stop();
  });

  const worker = async (component: string, c: Record<string, unknown>): Promise<DynamoWorker> => {
    const w = await new DynamoWorker(kv, { namespace: 'ns', component, card: c, transport: 'zmq', channelScope: 'endpoint' }).register();
    workers.push(w);
    return w;
  };
  const metric = async (name: string, labels = ''): Promise<number> => metricValue(await run.metricsText(), name, labels);
  const sources = async (): Promise<number[]> => Promise.all(['missing', 'active', 'ambiguous'].map((s) => metric('kv_dc_relay_dynamo_event_sources', `status="${s}"`)));
  const servedPool = (component: string): boolean => run.client.catalog()?.pools.some((p) => p.descriptor.servingEndpoint?.component === component) ?? false;
  /** The consumer has the catalog and the readiness entry of `model`, its one member without a pool. */
  const unboundInReadiness = (model: string): boolean => {
    const entry = run.client.readiness()?.entries.find((e) => e.canonicalModelId === model);
    return run.client.catalog() !== undefined && entry !== undefined && entry.state === ServingReadinessState.READY && entry.members.length === 1 && entry.members[0].poolId === undefined;
  };
  /** Stores `tokens` until the pool holds them (a PUB drops what no one hears yet). */
  const storeUntilHeld = async (w: DynamoWorker, pool: string, tokens: number[], first: bigint, what: string): Promise<void> => {
    await waitFor(async () => expectedHashes(tokens, null, BS).every((h) => run.holds(pool, h)) || (await w.store([first, first + 1n], tokens, BS), false), what, 10_000, 200);
  };

  test('no pool while no rank of the endpoint is Active (readiness keeps it); served once one is, withdrawn when none is again', async () => {
    const w = await worker('backend', card());
    // Entries exist for the endpoint, but its one rank has two incarnations: Ambiguous, none Active.
    await w.advertiseSource(0);
    const second = await w.advertiseSource(0, { publisherId: 0x777n });
    await run.start(relayConfig([], { discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] } } } }), []);
    await waitFor(async () => unboundInReadiness('llama') && !servedPool('backend') && (await metric('kv_dc_relay_dynamo_unbound_endpoints')) === 1, 'the endpoint in readiness without a pool', 10_000, 20);

    // One incarnation left: Active, the pool is served and takes the rank's events.
    await kv.delete().key(second);
    const pool = await run.poolKey('backend');
    expect(await metric('kv_dc_relay_dynamo_unbound_endpoints')).toBe(0);
    await storeUntilHeld(w, pool, tokenRange(100, 2 * BS), 11n, 'the Active rank’s blocks');

    // Ambiguous again: the pool is withdrawn; readiness keeps the endpoint.
    await w.advertiseSource(0, { publisherId: 0x778n });
    await waitFor(async () => unboundInReadiness('llama') && !servedPool('backend'), 'the pool withdrawn', 10_000, 20);
  }, 60_000);

  test('runtime_config.kv_state_endpoint pairs the card with the sources of that endpoint; a malformed one rejects the card', async () => {
    const kvState = { namespace: 'ns', component: 'backend', name: 'kv' };
    const w = await worker('backend', card({ data_parallel_size: 2, kv_state_endpoint: kvState }));
    await w.advertiseSource(0, { kvStateEndpoint: 'kv' });
    // A card whose kv_state_endpoint is not an EndpointId (no name) is rejected like any malformed entry.
    await worker('other', card({ kv_state_endpoint: { namespace: 'ns', component: 'other' } }, 'mistral'));
    await run.start(relayConfig([], { discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] } } } }), []);

    // Both of the card's ranks are sources of `kv`: rank 0 Active, rank 1 Missing; the pool is served.
    const pool = await run.poolKey('backend');
    await waitFor(async () => JSON.stringify(await sources()) === '[1,1,0]', 'rank 0 active and rank 1 missing at the KV-state endpoint', 10_000, 20);
    await storeUntilHeld(w, pool, tokenRange(100, 2 * BS), 11n, 'the Active rank’s blocks');
    expect(await metric('kv_dc_relay_dynamo_rejected_entries')).toBe(1);
    expect(servedPool('other')).toBe(false);

    // Rank 0 Ambiguous at `kv`: no rank is Active there, the pool is withdrawn. An entry for rank 1 at the
    // serving endpoint is not one of the card's KV-state endpoint: it binds nothing.
    await w.advertiseSource(0, { kvStateEndpoint: 'kv', publisherId: 0x777n });
    await w.advertiseSource(1);
    await waitFor(async () => unboundInReadiness('llama') && !servedPool('backend'), 'the pool withdrawn', 10_000, 20);
    expect(await metric('kv_dc_relay_dynamo_unbound_endpoints')).toBe(1);
  }, 60_000);

  test('cards of one endpoint that name different KV-state endpoints: every rank Ambiguous (endpoint mapping), no pool', async () => {
    const a = await worker('backend', card({ kv_state_endpoint: { namespace: 'ns', component: 'backend', name: 'kv' } }));
    await a.advertiseSource(0, { kvStateEndpoint: 'kv' });
    await run.start(relayConfig([], { discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] } } } }), []);
    await run.poolKey('backend');

    // A second worker of the endpoint whose card omits kv_state_endpoint (its serving endpoint).
    await worker('backend', card());
    await waitFor(async () => JSON.stringify(await sources()) === '[0,0,2]', 'both workers’ ranks ambiguous', 10_000, 20);
    await waitFor(() => !servedPool('backend'), 'the pool withdrawn', 10_000, 20);
    expect(await metric('kv_dc_relay_dynamo_unbound_endpoints')).toBe(1);
  }, 60_000);
});
