// A Dynamo-shaped deployment, read from a real etcd and a real nats-server (JetStream on) with no
// per-engine config: two namespaces, aggregated workers (one with two dp ranks and a LoRA adapter,
// on the NATS event plane; one on the ZMQ event plane) and a P/D pair (prefill on a JetStream stream,
// decode on NATS). The relay's catalog, readiness, pool contents and load are compared with what the
// spec says Dynamo's relay publishes for it (identity-topology-load.md §1, §3, §4.1, §5.1;
// hashing-ckf-cbi1.md §1.5): pool ids from the cards and endpoints, roles, READY entries with their
// adapter, canonical hashes chained from tokens_hash through parent_hash per (worker, dp rank).
import { Etcd3 } from 'etcd3';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { poolIdDisplay } from '../../src/identity';
import { poolIdOf } from '../../src/producer/pool-identity';
import { KvQueryHashFormat, ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import type { EndpointConfig } from '../../src/config/schema';
import { E2e, expectedHashes, metricValue, relayConfig, tokenRange } from '../e2e/harness';
import { DynamoWorker } from '../support/dynamo-worker';
import { EtcdServer } from '../support/etcd';
import { describeWithNatsAndEtcd, NatsServer } from '../support/nats';
import { waitFor } from '../support/waitFor';

const BS = 4;
const DC = 'dc-e2e';

/** The identity-relevant part of an endpoint, as the spec derives the pool id from it. */
function poolKeyOf(namespace: string, component: string, model: string, sourcePath?: string): string {
  const ep = { namespace, component, endpoint: 'generate', model: { name: model, sourcePath, kvBlockSize: BS, hashFormat: 'standard' } } as unknown as EndpointConfig;
  return poolIdDisplay(poolIdOf(ep, DC));
}

describeWithNatsAndEtcd('a Dynamo deployment from its etcd and event plane', () => {
  let etcd: EtcdServer;
  let nats: NatsServer;
  let kv: Etcd3;
  let nc: NatsConnection;
  let run: E2e;
  const workers: DynamoWorker[] = [];

  beforeEach(async () => {
    [etcd, nats] = await Promise.all([new EtcdServer().start(), new NatsServer().start()]);
    kv = new Etcd3({ hosts: etcd.endpoint });
    nc = await connect({ servers: nats.url });
    run = new E2e();
  });
  afterEach(async () => {
    await run.close();
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await nc.close();
    kv.close();
    await Promise.all([etcd.stop(), nats.stop()]);
  });

  const worker = async (o: ConstructorParameters<typeof DynamoWorker>[1]): Promise<DynamoWorker> => {
    const w = await new DynamoWorker(kv, { nats: nc, ...o }).register();
    workers.push(w);
    return w;
  };

  // The plane on a thread of its own (the default) and on the main thread (limits.ingestThreads 0).
  test.each([
    ['on its own thread', {}],
    ['on the main thread', { limits: { ingestThreads: 0 } }],
  ])('catalog, readiness, pool contents and load match the spec (event plane %s)', async (_where, extra) => {
    const aggregatedCard = (dp: number) => ({
      display_name: 'llama',
      source_path: 'meta/llama',
      kv_cache_block_size: BS,
      model_type: 'Chat | Completions',
      worker_type: 'aggregated',
      needs: [],
      runtime_config: { total_kv_blocks: 100, max_num_seqs: 8, data_parallel_start_rank: 0, data_parallel_size: dp },
    });
    const w1 = await worker({ namespace: 'ns-a', component: 'backend', card: aggregatedCard(2), adapters: [{ servedModel: 'llama-sql', loraName: 'sql-lora' }], transport: 'nats' });
    // The newest form: an endpoint-scoped ZMQ channel (scope.endpoint a nested EndpointId).
    const w2 = await worker({ namespace: 'ns-a', component: 'backend', card: aggregatedCard(1), transport: 'zmq', channelScope: 'endpoint' });
    const pd = (type: string, needs: string[][]) => ({ display_name: 'qwen', kv_cache_block_size: BS, model_type: type === 'prefill' ? 'Prefill' : 'Chat', worker_type: type, needs, runtime_config: { total_kv_blocks: 50 } });
    const prefill = await worker({ namespace: 'ns-b', component: 'prefill', card: pd('prefill', [['decode']]), transport: 'jetstream' });
    const decode = await worker({ namespace: 'ns-b', component: 'decode', card: pd('decode', []), transport: 'nats' });

    // Published before the relay starts: only the JetStream stream keeps it (read from its start).
    const early = tokenRange(9000, 2 * BS);
    await prefill.store([901n, 902n], early, BS);

    await run.start(relayConfig([], { ...extra, discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] }, nats: { servers: [nats.url] } } } }), []);

    // Catalog: one pool per serving endpoint with cards, ids from card and endpoint (§1.2), roles from worker_type.
    const keys = {
      agg: poolKeyOf('ns-a', 'backend', 'llama', 'meta/llama'),
      prefill: poolKeyOf('ns-b', 'prefill', 'qwen'),
      decode: poolKeyOf('ns-b', 'decode', 'qwen'),
    };
    await waitFor(() => run.client.catalog()?.pools.length === 3, 'three catalog pools', 15_000);
    const pools = new Map(run.client.catalog()!.pools.map((p) => [poolIdDisplay(p.descriptor.producer!.poolId!), p.descriptor]));
    expect([...pools.keys()].sort()).toEqual(Object.values(keys).sort());
    const agg = pools.get(keys.agg)!;
    expect(agg.servingEndpoint).toEqual({ namespace: 'ns-a', component: 'backend', endpoint: 'generate' });
    expect(agg.querySemantics).toEqual({ kvBlockSize: BS, hashFormat: KvQueryHashFormat.DYNAMO_STANDARD_V1 });
    expect(agg.poolRoles).toEqual([WorkerRole.AGGREGATED]);
    expect(agg.registrations.map((r) => [r.canonicalModelId, r.target?.base?.baseModel ?? `${r.target?.lora?.baseModel}+${r.target?.lora?.adapter}`]).sort()).toEqual([
      ['llama', 'llama'],
      ['llama-sql', 'llama+sql-lora'],
    ]);
    expect(pools.get(keys.prefill)!.poolRoles).toEqual([WorkerRole.PREFILL]);
    expect(pools.get(keys.decode)!.poolRoles).toEqual([WorkerRole.DECODE]);

    // Readiness (§3.2): every instance is registered, so every worker is live.
    await waitFor(() => (run.client.readiness()?.entries.length ?? 0) === 2 && run.client.readiness()!.entries.every((e) => e.state === ServingReadinessState.READY), 'two READY entries', 10_000);
    const [a, b] = run.client.readiness()!.entries;
    expect([a.namespace, a.canonicalModelId, b.namespace, b.canonicalModelId]).toEqual(['ns-a', 'llama', 'ns-b', 'qwen']);
    expect(a.presentRoles).toEqual([WorkerRole.AGGREGATED]);
    expect(a.adapters.map((x) => [x.canonicalModelId, x.state])).toEqual([['llama-sql', ServingReadinessState.READY]]);
    expect(b.presentRoles).toEqual([WorkerRole.PREFILL, WorkerRole.DECODE]);
    expect(b.missingRoles).toEqual([]);

    // Pool contents: canonical hashes chained from tokens_hash through parent_hash per (worker, dp rank).
    const p0 = tokenRange(100, 2 * BS);
    const p1 = tokenRange(200, 3 * BS);
    const lora = tokenRange(300, BS);
    const zmq = tokenRange(400, 2 * BS);
    const dec = tokenRange(500, BS);
    const aggKey = await run.poolKey('backend');
    // Core NATS drops what is published before the relay's subscription reaches the server: wait
    // until the relay counts its subjects (ns-a/backend, ns-b/prefill and ns-b/decode: kv-events and
    // the legacy kv_events each) as confirmed.
    await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_dynamo_channels', 'transport="nats"') === 6, 'the relay’s NATS subscriptions confirmed', 10_000);
    await w1.store([11n, 12n], p0, BS, { dpRank: 0 });
    await w1.store([21n], p1.slice(0, BS), BS, { dpRank: 1 });
    await w1.store([22n, 23n], p1.slice(BS), BS, { dpRank: 1, parent: 21n });
    await w1.store([31n], lora, BS, { lora: 'sql-lora' });
    await w2.store([41n, 42n], zmq, BS);
    // The ZMQ subscriber may join after the first send (a PUB drops what no one hears): resend until held.
    await waitFor(async () => {
      if (expectedHashes(zmq, null, BS).every((h) => run.holds(aggKey, h))) return true;
      await w2.store([41n, 42n], zmq, BS);
      return false;
    }, 'the ZMQ worker’s blocks', 10_000, 200);
    await decode.store([51n], dec, BS);
    await run.awaitHeld(aggKey, [...expectedHashes(p0, null, BS), ...expectedHashes(p1, null, BS), ...expectedHashes(lora, 'sql-lora', BS)], 'the NATS worker’s blocks on both ranks');
    await run.awaitHeld(await run.poolKey('prefill'), expectedHashes(early, null, BS), 'the stream’s blocks published before the relay started');
    await run.awaitHeld(await run.poolKey('decode'), expectedHashes(dec, null, BS), 'the decode worker’s block');

    // A removal and a cleared rank go through the same lineage.
    await w1.remove([12n], 0);
    await run.awaitGone(aggKey, [expectedHashes(p0, null, BS)[1]], 'the removed block');
    await w1.clear(1);
    await run.awaitGone(aggKey, expectedHashes(p1, null, BS), 'rank 1 cleared');
    expect(run.holds(aggKey, expectedHashes(p0, null, BS)[0])).toBe(true);

    // Load (§4.1, §5.3): expected ranks = declared ranks (2 + 1), capacity from total_kv_blocks per
    // rank, kv_used_blocks from each rank's ActiveLoad on kv_metrics (sums only at full coverage).
    await waitFor(() => (run.client.load()?.pools.size ?? 0) === 3, 'three load entries', 10_000);
    const aggLoad = () => [...run.client.load()!.pools.values()].find((e) => e.kvExpectedRanks === 3);
    expect(aggLoad()!.totalKvBlocks).toBe(300n);
    await w1.reportLoad(10, 0);
    await w1.reportLoad(20, 1);
    await waitFor(() => aggLoad()!.kvObservedRanks === 2, 'two of three ranks observed', 10_000);
    expect(aggLoad()!.kvUsedBlocks).toBe(0n);
    // w2's ActiveLoad goes out on its own ZMQ kv_metrics publisher (the plane's default since 1.3),
    // which its event channel advertises; resent until heard (a PUB drops what no one hears yet).
    await waitFor(async () => {
      if (aggLoad()!.kvObservedRanks === 3) return true;
      await w2.reportLoad(7, 0);
      return false;
    }, 'every rank observed (the ZMQ worker’s kv_metrics)', 10_000, 200);
    expect(aggLoad()!.kvUsedBlocks).toBe(37n);

    const metrics = await run.metricsText();
    expect(metricValue(metrics, 'kv_dc_relay_dynamo_workers', '')).toBe(4);
    expect(metricValue(metrics, 'kv_dc_relay_dynamo_malformed_total', '')).toBe(0);
    await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_dynamo_nats_connected', '') === 1, 'the plane’s NATS state in /metrics');
  }, 60_000);
});
