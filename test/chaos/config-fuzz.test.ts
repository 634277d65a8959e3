// Config fuzz: random mutations of a valid config (a value replaced by one of another type or out
// of range, a field deleted, an unknown field added, the text cut short) are written over a running
// relay's config file, one at a time. The relay never crashes; a mutation its own validator rejects
// is logged and changes nothing (the catalog keeps its revision and producer); an accepted one is
// applied whole, without an "applying the config failed" error: the consumer's catalog then lists
// exactly the pools the new file derives (endpoints, registrations, query semantics, roles). A few mutations are also given to `serve`
// at start: exit 2 with one line, or a clean start. CHAOS_FUZZ_SEED / CHAOS_FUZZ_RUNS reproduce a run.
import fc from 'fast-check';
import { RelayClient } from '../../src/client';
import { ConfigError } from '../../src/config/errors';
import { parseConfigText } from '../../src/config/load';
import type { RelayConfig } from '../../src/config/schema';
import { buildDeployment } from '../../src/producer/deployment';
import { poolKey } from '../../src/wire/producer-key';
import type { KvPoolDescriptor } from '../../src/wire/types';
import { SimulatedEngine } from '../../src/sim';
import { runCli } from '../support/cli-process';
import { endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { RelayProcess } from '../support/relay-process';
import { waitFor } from '../support/waitFor';
import { runAlone } from '../support/exclusive';

const SEED = Number(process.env.CHAOS_FUZZ_SEED ?? 20261202);
const RUNS = Number(process.env.CHAOS_FUZZ_RUNS ?? 30);
const START_RUNS = 4;
const SETTLE_MS = 15_000;
const QUIET_MS = 300;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
/** JSON.stringify replacer for values holding bigints (compared as their decimal text). */
const bigints = (_: string, v: unknown): unknown => (typeof v === 'bigint' ? `${v}n` : v);
type Path = (string | number)[];

const leaf: fc.Arbitrary<Json> = fc.oneof(
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.constantFrom(0, -1, 1.5, 2 ** 31, 2 ** 53 + 2, 1e308),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('', ' ', 'tcp://', '127.0.0.1:99999', 'ä\u0000'),
  fc.boolean(),
  fc.constant(null),
  fc.constant<Json>([]),
  fc.constant<Json>({}),
);

const mutation = fc.record({
  op: fc.constantFrom('replace', 'replace', 'replace', 'delete', 'add', 'cut'),
  at: fc.nat(),
  value: leaf,
  key: fc.string({ minLength: 1, maxLength: 8 }),
});
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function paths(value: Json, prefix: Path = []): Path[] {
  if (value === null || typeof value !== 'object') return [prefix];
  const entries: [string | number, Json][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return [prefix, ...entries.flatMap(([k, v]) => paths(v, [...prefix, k]))];
}

/** The config text after `m` (a deep copy of `base` is mutated). */
function mutate(base: Json, m: Mutation): string {
  const text = JSON.stringify(base, null, 1);
  if (m.op === 'cut') return text.slice(0, m.at % text.length);
  const copy = JSON.parse(text) as Json;
  const all = paths(copy).filter((p) => p.length > 0);
  const path = all[m.at % all.length];
  let parent = copy as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, Json>;
  const last = path[path.length - 1];
  if (m.op === 'replace') parent[last] = m.value;
  else if (m.op === 'delete') Array.isArray(parent) ? parent.splice(last as number, 1) : delete parent[last];
  else {
    const target = parent[last];
    if (target !== null && typeof target === 'object' && !Array.isArray(target)) (target as Record<string, Json>)[m.key] = m.value;
    else parent[last] = m.value;
  }
  return JSON.stringify(copy, null, 1);
}

type PoolView = Pick<KvPoolDescriptor, 'servingEndpoint' | 'registrations' | 'querySemantics' | 'poolRoles'> & { poolKey: string };

/**
 * The catalog a relay running with dcId `dcId` serves for `config` (the dcId applies at start only,
 * the endpoints on every change), pool by pool in key order.
 */
function expectedPools(dcId: string, config: RelayConfig): PoolView[] {
  return buildDeployment(dcId, config.endpoints).pools
    .map((p) => ({ poolKey: poolKey(p.poolId), servingEndpoint: p.servingEndpoint, registrations: p.registrations, querySemantics: p.querySemantics, poolRoles: p.poolRoles }))
    .sort((a, b) => (a.poolKey < b.poolKey ? -1 : 1));
}

function servedPools(client: RelayClient): PoolView[] | undefined {
  return client.catalog()?.pools
    .map(({ poolKey: key, descriptor: d }) => ({ poolKey: key, servingEndpoint: d.servingEndpoint, registrations: d.registrations, querySemantics: d.querySemantics, poolRoles: d.poolRoles }))
    .sort((a, b) => (a.poolKey < b.poolKey ? -1 : 1));
}

let relay: RelayProcess | undefined;
let engine: SimulatedEngine | undefined;
let client: RelayClient | undefined;
runAlone();

afterEach(async () => {
  client?.close();
  await relay?.close();
  await engine?.stop();
});

test(`${RUNS} config mutations over a running relay (seed ${SEED}): no crash, a rejected one changes nothing`, async () => {
  engine = await new SimulatedEngine({ modelName: 'llama' }).start();
  const base = relayConfig([endpointConfig([workerConfig(1, engine, { health: true, metrics: true })], { adapters: [{ name: 'tenant-a', servedModel: 'llama-a', workers: [1] }] })], {
    limits: { maxPoolStreamsTotal: 64 },
    timing: { poolHeartbeatMs: 10_000, loadWindowMs: 200 },
    queues: { publicationQueueCapacity: 16 },
  }) as Json;
  relay = await new RelayProcess(base as Record<string, unknown>).start();
  client = new RelayClient(relay.address, { subscriberId: 'fuzz', backoff: { initialMs: 20, maxMs: 200 } });
  client.start();
  await waitFor(() => client!.catalog()?.pools.length === 1, 'the catalog', SETTLE_MS);
  const dcId = String((base as { dcId: string }).dcId);
  // The comparison below sees what the catalog says: the base file's pool with its registrations.
  expect(servedPools(client)).toEqual(expectedPools(dcId, parseConfigText(JSON.stringify(base), relay.file, { bind: relay.address })));
  expect(servedPools(client)![0].registrations.length).toBeGreaterThan(1);

  const logged = (msg: (m: string) => boolean): number => relay!.events().filter((e) => msg(e.msg)).length;
  const applied = (): number => logged((m) => m === 'config changed; applying endpoints');
  const rejectedLog = (): number => logged((m) => m.endsWith('keeping the running config'));
  /** Until the consumer's catalog revision held still for QUIET_MS (an applied change has reached it). */
  const settled = async (): Promise<void> => {
    let last = client!.catalog()?.revision;
    let since = Date.now();
    await waitFor(() => {
      const now = client!.catalog()?.revision;
      if (now !== last) [last, since] = [now, Date.now()];
      return Date.now() - since >= QUIET_MS;
    }, 'a quiet catalog', SETTLE_MS, 20);
  };
  let current = JSON.stringify(base);
  let rejected = 0;
  let accepted = 0;
  for (const m of fc.sample(mutation, { seed: SEED, numRuns: RUNS })) {
    const text = mutate(base, m);
    if (text === current) continue;
    const parsed = (() => {
      try {
        return parseConfigText(text, relay!.file, { bind: relay!.address });
      } catch (err) {
        if (err instanceof ConfigError) return undefined;
        throw err;
      }
    })();
    const verdict = parsed ? 'ok' : 'rejected';
    await settled();
    const before = { applied: applied(), rejected: rejectedLog(), revision: client.catalog()?.revision, producers: client.catalog()?.pools.map((p) => p.producerKey) };
    relay.writeText(text);
    current = text;
    const what = `${JSON.stringify(m)} (${verdict})`;
    if (verdict === 'rejected') {
      rejected += 1;
      await waitFor(() => rejectedLog() > before.rejected || !relay!.running, `the rejection of ${what}`, SETTLE_MS, 20);
      expect(relay.running).toBe(true);
      expect(applied()).toBe(before.applied);
      await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
      expect(client.catalog()?.revision).toBe(before.revision);
      expect(client.catalog()?.pools.map((p) => p.producerKey)).toEqual(before.producers);
    } else {
      accepted += 1;
      await waitFor(() => applied() > before.applied || !relay!.running, `the application of ${what}`, SETTLE_MS, 20);
      // The relay must still answer after applying it.
      await waitFor(async () => (await relay!.metricsText()).includes('kv_dc_relay_catalog_pool_count'), `metrics after ${what}`, SETTLE_MS, 50);
      expect(relay.running).toBe(true);
      // ...and applied whole: the catalog comes to list what the new file derives, nothing of the old.
      const expected = expectedPools(dcId, parsed!);
      await waitFor(() => JSON.stringify(servedPools(client!), bigints) === JSON.stringify(expected, bigints), `the catalog of ${what}`, SETTLE_MS, 20)
        .catch(() => expect(servedPools(client!)).toEqual(expected));
    }
    expect(relay.events().filter((e) => e.msg === 'applying the config failed')).toEqual([]);
  }
  // Back to the base config: served as at the start.
  relay.write(base as Record<string, unknown>);
  await waitFor(() => client!.catalog()?.pools.length === 1 && client!.replica(client!.catalog()!.pools[0].poolKey) !== undefined, 'the base config served again', SETTLE_MS);
  expect(relay.running).toBe(true);
  console.log(`config fuzz (seed ${SEED}): ${accepted} mutations applied, ${rejected} rejected, relay alive`);
  expect(rejected).toBeGreaterThan(0);
}, 300_000);

test(`mutated configs at start (seed ${SEED}): exit 2 with one line, or a clean start`, async () => {
  const base = relayConfig([endpointConfig([])]) as Json;
  const samples = fc.sample(mutation, { seed: SEED + 1, numRuns: START_RUNS });
  const dirs: RelayProcess[] = [];
  try {
    const results = await Promise.all(samples.map(async (m) => {
      const r = new RelayProcess(base as Record<string, unknown>);
      dirs.push(r);
      r.writeText(mutate(base, m));
      let verdict = 'ok';
      try {
        parseConfigText(mutate(base, m), r.file, { bind: '127.0.0.1:0' });
      } catch {
        verdict = 'rejected';
      }
      if (verdict === 'ok') {
        await r.start();
        return { verdict, code: await r.stop('SIGTERM'), stderr: '' };
      }
      const run = await runCli(['serve', '--config', r.file, '--bind', '127.0.0.1:0']);
      return { verdict, code: run.code, stderr: run.stderr };
    }));
    for (const res of results) {
      if (res.verdict === 'ok') expect(res.code).toBe(0);
      else {
        expect(res.code).toBe(2);
        expect(res.stderr.trimEnd().split('\n')).toHaveLength(1);
      }
    }
  } finally {
    await Promise.all(dirs.map((d) => d.close()));
  }
}, 120_000);
