// kill -9 of the relay process under load: engines keep publishing and 8 RelayClient consumers, with
// the library's default options, keep their replicas. After the restart (same port, new incarnation)
// every consumer drops the dead incarnation's replica, re-handshakes and installs the new producer
// within 2 s of "listening"; the engines' replay from 0 refills the filter, and at rest every consumer
// holds exactly the new producer's image (word for word the same as a fresh subscriber's), which
// equals a model fed the engines' events. Nothing a consumer receives after the kill comes from the
// dead incarnation.
import { RelayClient } from '../../src/client';
import { CLIENT_BACKOFF_MAX_MS } from '../../src/config/defaults';
import { SimulatedEngine } from '../../src/sim';
import { endpointConfig, relayConfig, workerConfig, BS } from '../support/relay-config';
import { PoolModel, imageMismatch } from '../support/pool-model';
import { RelayProcess } from '../support/relay-process';
import { waitFor, waitForValue } from '../support/waitFor';
import { runAlone } from '../support/exclusive';

const CONSUMERS = 8;
const CONVERGE_MS = 2_000;
const SLOW_MS = 30_000;
const OUTAGE_FAILURES = 8;

let relay: RelayProcess;
const engines: SimulatedEngine[] = [];
const clients: RelayClient[] = [];
runAlone();

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await relay?.close();
  await Promise.allSettled(engines.splice(0).map((e) => e.stop()));
});

function consumer(address: string, id: string): RelayClient {
  const c = new RelayClient(address, { subscriberId: id });
  clients.push(c);
  c.start();
  return c;
}

function differingWords(a: BigUint64Array, b: BigUint64Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) out.push(i);
  return out;
}

/** The producer key of the catalog's only pool, once `c` has it installed. */
function installedProducer(c: RelayClient): string | undefined {
  const pool = c.catalog()?.pools[0];
  const replica = pool && c.replica(pool.poolKey);
  return replica && replica.producerKey === pool.producerKey ? replica.producerKey : undefined;
}

test('kill -9 under load: consumers converge to the new incarnation within 2 s, replay refills it exactly', async () => {
  const model = new PoolModel(BS);
  for (const id of [1, 2]) {
    const e = await new SimulatedEngine({ modelName: 'llama', workload: { blockSize: BS, seed: id, capacityBlocks: 128 } }).start();
    engines.push(e);
    model.follow(e, id);
  }
  relay = await new RelayProcess(relayConfig([endpointConfig(engines.map((e, i) => workerConfig(i + 1, e)))])).start();
  engines.forEach((e) => e.startWorkload(20));
  const consumers = Array.from({ length: CONSUMERS }, (_, i) => consumer(relay.address, `chaos-${i}`));
  await waitFor(() => consumers.every((c) => installedProducer(c) !== undefined), 'every consumer to install the pool', SLOW_MS, 10);
  // A relay that dies within the backoff cap of its consumers connecting is a crash loop, which they
  // back off from; this one has served them that long, so they retry quickly (src/client/backoff.ts).
  const installedAt = Date.now();
  await waitFor(() => Date.now() - installedAt > CLIENT_BACKOFF_MAX_MS, 'the connections to count as established', SLOW_MS, 50);
  expect(consumers.every((c) => installedProducer(c) !== undefined)).toBe(true);
  const oldProducer = installedProducer(consumers[0])!;
  const oldIncarnation = consumers[0].relayIdentity()!.relayIncarnation;

  // Once the new incarnation listens, every frame a consumer accepts must come from another producer
  // generation (frames the dead one sent before dying may still be read until the loss is noticed).
  let restarted = false;
  const fromDead: string[] = [];
  const invalidated = new Set<RelayClient>();
  for (const c of consumers) {
    c.on('replicaInstalled', (e) => restarted && e.producerKey === oldProducer && fromDead.push('installed'));
    c.on('delta', (e) => restarted && e.producerKey === oldProducer && fromDead.push('delta'));
    c.on('replicaInvalidated', (e) => e.producerKey === oldProducer && invalidated.add(c));
  }
  let killed = false;
  const catalogFailures = new Map<RelayClient, number>();
  for (const c of consumers) c.on('error', (e) => killed && e.plane === 'catalog' && catalogFailures.set(c, (catalogFailures.get(c) ?? 0) + 1));
  expect(await relay.stop('SIGKILL')).toBeNull();
  killed = true;
  // The relay stays away as long as a supervisor's restart takes: until every consumer's catalog
  // stream failed OUTAGE_FAILURES times. A restart quicker than that would hide the backoff: a delay
  // doubling from 100 ms on would by now be 2.5-5 s between attempts, so the slowest of 8 consumers
  // would come back seconds after "listening".
  await waitFor(() => consumers.every((c) => (catalogFailures.get(c) ?? 0) >= OUTAGE_FAILURES), 'every consumer to retry through the outage', SLOW_MS, 10);
  await relay.start();
  restarted = true;
  const newProducer = await waitForValue(() => {
    const keys = consumers.map(installedProducer);
    return keys.every((k) => k !== undefined && k !== oldProducer) && keys[0];
  }, 'every consumer to install the new incarnation', SLOW_MS, 5);
  const convergedMs = Date.now() - relay.listeningAt;
  console.log(`relay kill -9: ${CONSUMERS} default-configured consumers on the new incarnation ${convergedMs} ms after "listening"`);
  expect(convergedMs).toBeLessThanOrEqual(CONVERGE_MS);
  expect(consumers.map(installedProducer)).toEqual(consumers.map(() => newProducer));
  expect(consumers.every((c) => c.relayIdentity()!.relayIncarnation !== oldIncarnation)).toBe(true);
  expect(invalidated.size).toBe(CONSUMERS);

  // At rest: the replay from 0 has refilled the filter with every engine's blocks, nothing else.
  engines.forEach((e) => e.stopWorkload());
  const poolKey = consumers[0].catalog()!.pools[0].poolKey;
  await waitFor(() => consumers.every((c) => imageMismatch(c.replica(poolKey), model.hashes()) === undefined), 'every replica to equal the model', SLOW_MS, 20)
    .catch((err: Error) => {
      throw new Error(`${err.message}: ${imageMismatch(consumers[0].replica(poolKey), model.hashes())}`);
    });
  expect(model.hashes().length).toBeGreaterThan(50);
  expect(model.rejected).toBe(0);
  const fresh = consumer(relay.address, 'chaos-fresh');
  await waitFor(() => installedProducer(fresh) === newProducer, 'a fresh consumer snapshot', SLOW_MS);
  // The hub may serve a recent shared snapshot and the deltas since (few when ingest coalesces
  // bursts): the fresh replica is compared once those have been applied.
  await waitFor(() => fresh.replica(poolKey)!.sequence === consumers[0].replica(poolKey)!.sequence, 'the fresh consumer to catch up', SLOW_MS);
  const image = fresh.replica(poolKey)!;
  for (const c of consumers) {
    const replica = c.replica(poolKey)!;
    expect(replica.sequence).toBe(image.sequence);
    expect(differingWords(replica.words!, image.words!)).toEqual([]);
  }
  expect(fromDead).toEqual([]);
}, 120_000);
