// v1/event_sources read from a real etcd by a relay started on it (identity-topology-load.md §5.2): a
// Dynamo worker advertises its KV publisher per dp rank; operators see each logical source's status in
// /metrics and a warning once per transition into Ambiguous or invalid (not on every discovery pass),
// and a rank that becomes Ambiguous loses its blocks and has its events dropped until it is Active again.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Writable } from 'stream';
import { Etcd3 } from 'etcd3';
import { createLogger } from '../../src/log';
import { startRelay, type RunningRelay } from '../../src/server';
import { E2e, expectedHashes, metricValue, tokenRange } from '../e2e/harness';
import { DynamoWorker } from '../support/dynamo-worker';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { relayConfig } from '../support/relay-config';
import { waitFor } from '../support/waitFor';

/** The relay's log lines, parsed. */
class LogLines extends Writable {
  readonly lines: { level: number; msg: string; [field: string]: unknown }[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) this.lines.push(JSON.parse(line));
    done();
  }
  matching(msg: RegExp): { [field: string]: unknown }[] {
    return this.lines.filter((l) => msg.test(l.msg));
  }
}

describeWithEtcd('Dynamo v1/event_sources from a real etcd', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  let relay: RunningRelay | undefined;
  let worker: DynamoWorker | undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-evsrc-'));

  beforeEach(async () => {
    etcd = await new EtcdServer().start();
    kv = new Etcd3({ hosts: etcd.endpoint });
  });
  afterEach(async () => {
    await relay?.shutdown();
    await worker?.close();
    kv.close();
    await etcd.stop();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('each source’s status in /metrics; a warning once per transition into Ambiguous or invalid', async () => {
    const card = { display_name: 'llama', kv_cache_block_size: 4, model_type: 'Chat', worker_type: 'aggregated', needs: [], runtime_config: { total_kv_blocks: 100, data_parallel_size: 2 } };
    worker = await new DynamoWorker(kv, { namespace: 'ns', component: 'backend', card, transport: 'zmq', channelScope: 'endpoint' }).register();
    const log = new LogLines();
    const file = path.join(dir, 'relay.json');
    fs.writeFileSync(file, JSON.stringify(relayConfig([], { discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] } } } })));
    relay = await startRelay({ configFile: file, logger: createLogger({ destination: log, level: 'info' }) });
    const gauge = async (): Promise<number[]> => {
      const text = await (await fetch(`http://${relay!.metricsAddress}/metrics`)).text();
      return ['missing', 'active', 'ambiguous', 'invalid'].map((s) => metricValue(text, 'kv_dc_relay_dynamo_event_sources', `status="${s}"`));
    };
    const becomes = (expected: number[], what: string) => waitFor(async () => JSON.stringify(await gauge()) === JSON.stringify(expected), what, 10_000, 20);
    const ambiguous = /event source ambiguous/;
    const invalid = /event source invalid/;

    // A deployment without event sources: nothing counted.
    expect(await gauge()).toEqual([0, 0, 0, 0]);

    // Rank 0 advertised, rank 1 not (yet): Active and Missing.
    const rank0 = await worker.advertiseSource(0, { recoverable: true });
    await becomes([1, 1, 0, 0], 'rank 0 active, rank 1 missing');

    // A second publisher for rank 0: Ambiguous (incarnations), warned once.
    const second = await worker.advertiseSource(0, { publisherId: 0x1234n });
    await becomes([1, 0, 1, 0], 'rank 0 ambiguous');
    // Another discovery pass (rank 1 advertised) does not warn again.
    await worker.advertiseSource(1);
    await becomes([0, 1, 1, 0], 'rank 1 active');
    expect(log.matching(ambiguous).map((l) => [l.workerId, l.dpRank, l.reason])).toEqual([[worker.id.toString(), 0, 'incarnations']]);
    expect(log.matching(ambiguous)[0].publishers).toEqual(expect.arrayContaining(['4660']));

    // The second incarnation goes away: Active again.
    await kv.delete().key(second);
    await becomes([0, 2, 0, 0], 'rank 0 active again');

    // An entry that contradicts its key: invalid, warned once with its key.
    const bad = await worker.advertiseSource(0, { publisherId: 0x99n, edit: (v) => (v.metadata.publisher_id = 0x98) });
    await becomes([0, 2, 0, 1], 'the invalid entry counted');
    expect(log.matching(invalid).map((l) => l.key)).toEqual([bad]);

    // Rank 0's descriptor rewritten in place (values are immutable once written): Ambiguous (conflicting descriptor).
    await worker.advertiseSource(0, { edit: (v) => (v.metadata.recovery_target = undefined) });
    await becomes([0, 1, 1, 1], 'rank 0 ambiguous for its changed descriptor');
    expect(log.matching(ambiguous).map((l) => l.reason)).toEqual(['incarnations', 'conflicting-descriptor']);
    expect(rank0).toMatch(/^v1\/event_sources\/namespace\/ns\/component\/backend\/endpoint\/generate\/topic\/kv-events\/[0-9a-f]+$/);
  }, 60_000);

  test('a peer-chosen key or value quoted in a warning is clipped: the lines stay small however long the key', async () => {
    const card = { display_name: 'llama', kv_cache_block_size: 4, model_type: 'Chat', worker_type: 'aggregated', needs: [], runtime_config: { total_kv_blocks: 100 } };
    worker = await new DynamoWorker(kv, { namespace: 'ns', component: 'backend', card, transport: 'zmq', channelScope: 'endpoint' }).register();
    const log = new LogLines();
    const file = path.join(dir, 'relay-clip.json');
    fs.writeFileSync(file, JSON.stringify(relayConfig([], { discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] } } } })));
    relay = await startRelay({ configFile: file, logger: createLogger({ destination: log, level: 'info' }) });
    // A key outside Dynamo's layout (its id is not hex), 200 000 characters long; and a source whose
    // value names a 200 000-character topic (invalid: not its key's topic, quoted in the problem).
    const longKey = `v1/mdc/ns/backend/generate/${'g'.repeat(200_000)}`;
    await kv.put(longKey).value('{}');
    await worker.advertiseSource(0, { edit: (v) => (v.topic = 't'.repeat(200_000)) });
    await waitFor(() => log.matching(/entry rejected/).length > 0 && log.matching(/event source invalid/).length > 0, 'both warnings', 10_000, 20);
    const [rejected] = log.matching(/entry rejected/);
    const [invalid] = log.matching(/event source invalid/);
    for (const field of [rejected.key, rejected.problem, invalid.key, invalid.problem]) expect(String(field).length).toBeLessThan(600);
    expect(String(rejected.key)).toMatch(/^v1\/mdc\/ns\/backend\/generate\/g+… \(200027 characters\)$/);
    expect(String(invalid.problem)).toMatch(/^topic t+… \(\d+ characters\)$/);
  }, 60_000);
});

describeWithEtcd('Dynamo v1/event_sources gate the event plane (real etcd, ZMQ, relay and consumer)', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  let run: E2e;
  let worker: DynamoWorker | undefined;
  const BS = 4;

  beforeEach(async () => {
    etcd = await new EtcdServer().start();
    kv = new Etcd3({ hosts: etcd.endpoint });
    run = new E2e();
  });
  afterEach(async () => {
    await run.close();
    await worker?.close();
    kv.close();
    await etcd.stop();
  });

  test('an Ambiguous rank is reset and its events dropped; Active again, it is reset once more and its events applied', async () => {
    const card = { display_name: 'llama', kv_cache_block_size: BS, model_type: 'Chat', worker_type: 'aggregated', needs: [], runtime_config: { total_kv_blocks: 100, data_parallel_size: 2 } };
    const w = (worker = await new DynamoWorker(kv, { namespace: 'ns', component: 'backend', card, transport: 'zmq', channelScope: 'endpoint' }).register());
    await w.advertiseSource(0);
    // Rank 1 Active keeps the pool served while rank 0 is Ambiguous (with no Active rank it would be
    // withdrawn: source-binding.test.ts).
    await w.advertiseSource(1);
    await run.start(relayConfig([], { discovery: { dynamo: { etcd: { endpoints: [etcd.endpoint] } } } }), []);
    const pool = await run.poolKey('backend');
    const sourceGauge = async (status: string): Promise<number> => metricValue(await run.metricsText(), 'kv_dc_relay_dynamo_event_sources', `status="${status}"`);
    const rejected = async (): Promise<number> => metricValue(await run.metricsText(), 'kv_dc_relay_ingest_rejected_ranks_total', `worker="${w.id}",dp_rank="0"`);
    /** Stores `tokens` (ids from `first`) until the pool holds them (a PUB drops what no one hears yet). */
    const storeUntilHeld = async (tokens: number[], first: bigint, what: string): Promise<void> => {
      const ids = [first, first + 1n];
      await waitFor(async () => expectedHashes(tokens, null, BS).every((h) => run.holds(pool, h)) || (await w.store(ids, tokens, BS), false), what, 10_000, 200);
    };

    const a = tokenRange(100, 2 * BS);
    await storeUntilHeld(a, 11n, 'the Active rank’s blocks');

    // A second incarnation advertised for rank 0: Ambiguous; the rank is reset (its blocks dropped).
    const second = await w.advertiseSource(0, { publisherId: 0x777n });
    await waitFor(async () => (await sourceGauge('ambiguous')) === 1, 'rank 0 ambiguous', 10_000, 20);
    await run.awaitGone(pool, expectedHashes(a, null, BS), 'the Ambiguous rank’s blocks dropped');

    // Its events are dropped (counted as a rank not accepted), not applied.
    const b = tokenRange(200, 2 * BS);
    await waitFor(async () => (await rejected()) > 0 || (await w.store([21n, 22n], b, BS), false), 'an event of the Ambiguous rank dropped', 10_000, 200);
    expect(expectedHashes(b, null, BS).some((h) => run.holds(pool, h))).toBe(false);

    // The second incarnation gone: Active again, its events applied.
    await kv.delete().key(second);
    await waitFor(async () => (await sourceGauge('active')) === 2, 'rank 0 active again', 10_000, 20);
    const c = tokenRange(300, 2 * BS);
    await storeUntilHeld(c, 31n, 'the rank’s blocks once Active again');
    expect(expectedHashes(b, null, BS).some((h) => run.holds(pool, h))).toBe(false);
    // Reset on entering Ambiguous and on leaving it (the thread's counters reach /metrics periodically).
    await waitFor(async () => metricValue(await run.metricsText(), 'kv_dc_relay_ingest_resets_total', `worker="${w.id}",dp_rank="0"`) === 2, 'two resets of rank 0', 10_000, 50);
  }, 60_000);
});
