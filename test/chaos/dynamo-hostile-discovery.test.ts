// Hostile v1/ entries in a real etcd, read by a real relay process serving a valid Dynamo deployment
// (discovery.dynamo): every v1/ key is written by a network peer holding etcd credentials. A stream of
// malformed, oversized, deep, overflowing and conflicting entries is written, rewritten and deleted
// while a worker serves its pool. The relay stays up and answers GetRelayInfo between batches, its
// valid pool stays in the catalog (same producer), the rejected-entries gauge rises, and its discovery
// is not behind: once the stream ends, its gauges equal the projection of what etcd then holds (so the
// last change was applied by a pass). The event-loop delay's max over the stream stays under a
// generous bound: a pass parses only what changed (values at the bound stay resident), and no rank walk
// runs past the u32 ranks a card may declare. CHAOS_DYNAMO_ROUNDS / CHAOS_DYNAMO_BIG_VALUES size a run.
import { Etcd3 } from 'etcd3';
import { RelayClient } from '../../src/client';
import { MAX_DYNAMO_VALUE_BYTES } from '../../src/config/limits';
import { projectDynamo } from '../../src/dynamo/discovery/project';
import { RELAY_CONTRACT_MARKER } from '../../src/wire/constants';
import { getRelayInfo, makeClient } from '../../src/wire/service';
import { metricValue } from '../e2e/harness';
import { DynamoWorker, eventSourceEntry } from '../support/dynamo-worker';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { runAlone } from '../support/exclusive';
import { relayConfig } from '../support/relay-config';
import { RelayProcess } from '../support/relay-process';
import { waitFor } from '../support/waitFor';

runAlone();

const ROUNDS = Number(process.env.CHAOS_DYNAMO_ROUNDS ?? 6);
const BIG_VALUES = Number(process.env.CHAOS_DYNAMO_BIG_VALUES ?? 16);
const SETTLE_MS = 20_000;
/**
 * Generous: a pass over this deployment costs tens of ms, a changed value at the bound ~100-200 ms; a
 * pass that parses every resident value again costs seconds, and a rank walk that never ends, forever.
 */
const LOOP_DELAY_BOUND_S = 1;
const EP = { namespace: 'ns', component: 'backend', endpoint: 'generate' };
const CARD = { display_name: 'llama', kv_cache_block_size: 4, model_type: 'Chat', worker_type: 'aggregated', needs: [], runtime_config: { total_kv_blocks: 100, data_parallel_size: 1 } };

const mdc = (id: number, ep = 'ns/backend/generate', suffix = ''): string => `v1/mdc/${ep}/${id.toString(16)}${suffix}`;
/** A Model value for `id` on `ep` with `card` (text spliced in, so numbers past 2^53 stay exact). */
const model = (id: number, card: string, ep = EP): string => `{"type":"Model","namespace":"${ep.namespace}","component":"${ep.component}","endpoint":"${ep.endpoint}","instance_id":${id},"card_json":${card}}`;
const cardWith = (rc: string, extra = ''): string => `{"display_name":"llama","kv_cache_block_size":4,"model_type":"Chat","worker_type":"aggregated","needs":[]${extra},"runtime_config":${rc}}`;

/** Round `round`'s hostile entries: each a value the relay must reject, count, or keep off the valid pool. */
function hostile(round: number): Map<string, string> {
  const m = new Map<string, string>();
  const other = { namespace: 'ns', component: 'other', endpoint: 'generate' };
  // Rank walks: a start rank past 2^53 (r + 1 === r), 2^64, a range past u32, a size past 4096.
  m.set(mdc(0xbad01), model(0xbad01, cardWith(`{"data_parallel_size":2,"data_parallel_start_rank":${9007199254740991 + round}}`)));
  m.set(mdc(0xbad02), model(0xbad02, cardWith('{"data_parallel_size":3,"data_parallel_start_rank":18446744073709551616}')));
  m.set(mdc(0xbad03), model(0xbad03, cardWith(`{"data_parallel_size":2,"data_parallel_start_rank":${4294967295 - round % 2}}`)));
  m.set(mdc(0xbad04), model(0xbad04, cardWith(`{"data_parallel_size":${2 ** 53 + round}}`)));
  m.set(mdc(0xbad05), model(0xbad05, cardWith('{"data_parallel_size":1e308,"data_parallel_start_rank":-1}')));
  // Wrong types, a missing required field, a value that is no JSON, one too deep for any parser.
  m.set(mdc(0xbad06), model(0xbad06, `{"display_name":${round},"kv_cache_block_size":"4"}`));
  m.set(mdc(0xbad07), `{"type":"Model","namespace":"ns"${','.repeat(round)}`);
  m.set(mdc(0xbad08), `${'['.repeat(200_000 + round)}${']'.repeat(200_000 + round)}`);
  m.set(mdc(0xbad09), '\u0000\u00ff\ud83d\ude00');
  // At the value bound (parsed, then rejected: no display_name) and just past it (rejected unparsed).
  const pad = (n: number): string => model(0xbad0a, `{"kv_cache_block_size":4,"pad":"${'p'.repeat(n)}"}`);
  m.set(mdc(0xbad0a), pad(MAX_DYNAMO_VALUE_BYTES - pad(0).length - round));
  m.set(mdc(0xbad0b), `"${'q'.repeat(MAX_DYNAMO_VALUE_BYTES + round)}"`);
  // Keys outside the layout: an upper-case id, a leading zero, 17 digits, a segment too many.
  m.set(`v1/mdc/ns/backend/generate/BAD0C`, model(0xbad0c, CARD_TEXT));
  m.set(`v1/instances/ns/backend/generate/0bad0d`, `{"type":"Endpoint","namespace":"ns","component":"backend","endpoint":"generate","instance_id":${0xbad0d}}`);
  m.set(`v1/instances/ns/backend/generate/${'f'.repeat(17)}`, '{}');
  m.set(`v1/mdc/ns/backend/generate/bad0e/a/b`, model(0xbad0e, CARD_TEXT));
  // An instance whose value names another id; an event channel and an event source that do not parse.
  m.set(`v1/instances/ns/backend/generate/bad0f`, `{"type":"Endpoint","namespace":"ns","component":"backend","endpoint":"generate","instance_id":${0xbad10 + round}}`);
  m.set(`v1/event_channels/namespace/ns/topic/kv-events/bad11`, `{"type":"EventChannel","scope":{"kind":"namespace","name":"ns"},"topic":"kv-events","instance_id":${0xbad11},"transport":{"kind":"Zmq","config":{"endpoint":${round}}}}`);
  m.set(`v1/event_sources/namespace/ns/component/backend/endpoint/generate/topic/kv-events/bad12`, `{"type":"EventSource","topic":"kv-events","publisher_id":${0xbad12},"metadata":{"worker":{"worker_id":1,"dp_rank":${2 ** 32 + round}}}}`);
  // An event source for a worker and rank that have no card (Missing for it, nothing for the pool),
  // and one whose value contradicts its key (invalid: it counts for no rank).
  const [absentKey, absentValue] = eventSourceEntry(EP, 0xbad13n, 7 + round, 0xbad13n);
  m.set(absentKey, absentValue);
  const [liarKey, liarValue] = eventSourceEntry(EP, 0xbad14n, 0, 0xbad14n, { edit: (v) => (v.publisher_id = BigInt(0xbad15 + round)) });
  m.set(liarKey, liarValue);
  // Another endpoint whose cards disagree (left out for a conflict) and one worker there with 4096 ranks.
  m.set(mdc(0xbad16, 'ns/other/generate'), model(0xbad16, CARD_TEXT, other));
  m.set(mdc(0xbad17, 'ns/other/generate'), model(0xbad17, CARD_TEXT.replace('"llama"', `"mistral-${round}"`), other));
  m.set(mdc(0xbad18, 'ns/wide/generate'), model(0xbad18, cardWith('{"data_parallel_size":4096}'), { ...other, component: 'wide' }));
  // A crowd: many small entries on one endpoint.
  for (let i = 0; i < 300; i++) m.set(`v1/instances/ns/crowd/generate/${(0xc000 + i).toString(16)}`, `{"type":"Endpoint","namespace":"ns","component":"crowd","endpoint":"generate","instance_id":${0xc000 + i + (i % 7 === round % 7 ? 1 : 0)}}`);
  return m;
}
const CARD_TEXT = JSON.stringify(CARD);

/**
 * Values at the bound that parse and are then rejected, written before the stream and never changed:
 * a pass must not parse them again for every change elsewhere under v1/ (one costs ~100-200 ms).
 */
function resident(): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i < BIG_VALUES; i++) {
    const pad = (n: number): string => model(0xb160 + i, `{"kv_cache_block_size":4,"pad":"${'r'.repeat(n)}"}`);
    m.set(mdc(0xb160 + i), pad(MAX_DYNAMO_VALUE_BYTES - pad(0).length));
  }
  return m;
}

describeWithEtcd('hostile Dynamo discovery entries against a real relay process', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  let worker: DynamoWorker;
  let relay: RelayProcess;
  let client: RelayClient;
  let grpc: ReturnType<typeof makeClient>;

  beforeAll(async () => {
    etcd = await new EtcdServer().start();
    // The test's own full reads of v1/ hold the resident values too (more than grpc-js's default 4 MiB).
    kv = new Etcd3({ hosts: etcd.endpoint, grpcOptions: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 } });
    worker = await new DynamoWorker(kv, { ...EP, card: CARD, transport: 'zmq', channelScope: 'endpoint' }).register();
    await worker.advertiseSource(0, { recoverable: true });
    relay = await new RelayProcess(relayConfig([], { discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] } } } })).start();
    client = new RelayClient(relay.address, { subscriberId: 'chaos-dynamo', backoff: { initialMs: 20, maxMs: 200 } });
    client.start();
    grpc = makeClient(relay.address);
  });
  afterAll(async () => {
    grpc?.close();
    client?.close();
    await relay?.close();
    await worker?.close();
    kv?.close();
    await etcd?.stop();
  });

  /** The largest event-loop delay any scrape reported (each covers the time since the previous one). */
  let worstDelayS = 0;
  const scrape = async (): Promise<string> => {
    const text = await relay.metricsText();
    worstDelayS = Math.max(worstDelayS, metricValue(text, 'kv_dc_relay_event_loop_delay_seconds', 'quantile="1"'));
    return text;
  };
  const gauge = async (name: string): Promise<number> => metricValue(await scrape(), name, '');
  const relayInfo = () => getRelayInfo(grpc, { contractMarker: RELAY_CONTRACT_MARKER }, { deadline: Date.now() + 5_000 });
  /** The projection of what etcd holds under v1/ now (the real function the relay runs). */
  const expected = async () => projectDynamo(new Map(Object.entries(await kv.getAll().prefix('v1/').strings()).map(([k, v]) => [k, v] as [string, string])));

  test('the relay stays up and serves its valid pool; rejected entries are counted; discovery is not behind', async () => {
    await waitFor(() => client.catalog()?.pools.length === 1, 'the valid pool in the catalog', SETTLE_MS);
    const producer = client.catalog()!.pools[0].producerKey;
    expect(await gauge('kv_dc_relay_dynamo_rejected_entries')).toBe(0);
    // Written through the watch: together they are more than one etcd range response may hold (4 MiB
    // by default in grpc-js), which the relay's initial full read cannot take yet.
    for (const [key, value] of resident()) await kv.put(key).value(value);
    await waitFor(async () => (await gauge('kv_dc_relay_dynamo_rejected_entries')) === BIG_VALUES, 'the resident values rejected', SETTLE_MS, 50);
    await relayInfo();
    // The loop-delay gauges cover the time since the previous scrape: this one opens the window.
    await relay.metricsText();
    worstDelayS = 0;

    let written = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const entries = hostile(round);
      // Rewritten each round (changed values); a few removed every other round, to be written again.
      for (const [key, value] of entries) await kv.put(key).value(value);
      if (round % 2 === 1) for (const key of [...entries.keys()].filter((_, i) => i % 5 === 0)) await kv.delete().key(key);
      written = new Set([...written, ...entries.keys()]);
      expect(relay.running).toBe(true);
      const info = await relayInfo();
      expect(info.contractMarker).toBe(RELAY_CONTRACT_MARKER);
      expect(client.catalog()?.pools.map((p) => p.producerKey)).toContain(producer);
    }

    const want = await expected();
    expect(want.rejected.length).toBeGreaterThanOrEqual(BIG_VALUES + 20);
    const now = async () => [await gauge('kv_dc_relay_dynamo_rejected_entries'), await gauge('kv_dc_relay_dynamo_conflicts'), await gauge('kv_dc_relay_dynamo_endpoints'), await gauge('kv_dc_relay_dynamo_workers')];
    const target = [want.rejected.length, want.conflicts.length, want.endpoints.length, want.workers.size];
    await waitFor(async () => JSON.stringify(await now()) === JSON.stringify(target), `discovery gauges ${JSON.stringify(target)}`, SETTLE_MS, 50);
    await scrape();
    expect(worstDelayS).toBeLessThan(LOOP_DELAY_BOUND_S);

    // The valid pool is still the one served, and the relay still answers.
    expect(relay.running).toBe(true);
    await relayInfo();
    expect(client.catalog()?.pools.map((p) => p.producerKey)).toContain(producer);
    expect(want.endpoints.map((e) => `${e.namespace}/${e.component}/${e.endpoint}`)).toContain('ns/backend/generate');
    expect(want.unbound.has('ns/backend/generate')).toBe(false);
    expect(relay.stderr).not.toMatch(/uncaught|unhandled|FATAL/i);
    expect(written.size).toBeGreaterThan(300);
  });
});
