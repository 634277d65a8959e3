// Misconfigurations of a real relay speak: a relay started as `serve` starts it, with one engine that
// publishes another block size than its pool's, one endpoint where nothing listens and one healthy
// engine with a consumer. Each warning is one JSON log line naming worker, rank and endpoint, said
// once; /status, `kv-dc-relay status` and /metrics show the same state.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough, Writable } from 'stream';
import { main } from '../../src/cli/main';
import { RelayClient } from '../../src/client';
import type { StatusDocument } from '../../src/diagnostics/status';
import { createLogger } from '../../src/log';
import { startRelay, type RunningRelay } from '../../src/server';
import { SimulatedEngine } from '../../src/sim';
import { runCli } from '../support/cli-process';
import { freePort } from '../support/etcd-server';
import { BS, endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { waitFor } from '../support/waitFor';

interface LogLine {
  level: number;
  msg: string;
  check?: string;
  [field: string]: unknown;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-diag-'));
const lines: LogLine[] = [];
let wrongSize: SimulatedEngine;
let healthy: SimulatedEngine;
let relay: RunningRelay;
let consumer: RelayClient;
let deadEndpoint: string;

beforeAll(async () => {
  wrongSize = await new SimulatedEngine({ modelName: 'llama', workload: { blockSize: 2 * BS } }).start();
  healthy = await new SimulatedEngine({ modelName: 'mistral', workload: { blockSize: BS } }).start();
  deadEndpoint = `tcp://127.0.0.1:${await freePort()}`;
  const file = path.join(dir, 'relay.json');
  fs.writeFileSync(
    file,
    JSON.stringify(
      relayConfig([
        endpointConfig([workerConfig(1, wrongSize)], { component: 'wrong-size' }),
        endpointConfig([{ id: 2, kvEvents: { endpoint: deadEndpoint } }], { component: 'nothing-there', model: { name: 'qwen' } }),
        endpointConfig([workerConfig(3, healthy)], { component: 'healthy', model: { name: 'mistral' } }),
      ]),
    ),
  );
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as LogLine);
      done();
    },
  });
  relay = await startRelay({ configFile: file, logger: createLogger({ destination: sink, level: 'info' }) });
  await Promise.all([wrongSize.waitForSubscribers(), healthy.waitForSubscribers()]);
  wrongSize.startWorkload(20);
  healthy.startWorkload(20);
  // A consumer of the healthy pool, so that its deltas are published (and timed).
  consumer = new RelayClient(relay.address, { subscriberId: 'diag-test', pools: (pool) => pool.descriptor.registrations.some((r) => r.canonicalModelId === 'mistral') });
  consumer.start();
}, 30_000);

afterAll(async () => {
  consumer?.close();
  wrongSize?.stopWorkload();
  healthy?.stopWorkload();
  await relay?.shutdown();
  await Promise.all([wrongSize?.stop(), healthy?.stop()]);
  fs.rmSync(dir, { recursive: true, force: true });
});

const warnings = (check: string): LogLine[] => lines.filter((l) => l.level === 40 && l.check === check);

test('every misconfiguration is one warning naming worker, rank and endpoint; the healthy engine none', async () => {
  await waitFor(() => warnings('block_size_mismatch').length > 0, 'the block-size warning', 10_000);
  expect(warnings('block_size_mismatch')[0]).toMatchObject({
    msg: "KV events dropped: the engine's block size is not the pool's kvBlockSize",
    worker: '1',
    dpRank: 0,
    endpoint: wrongSize.pubEndpoint,
    configuredBlockSize: BS,
    receivedBlockSize: 2 * BS,
  });
  await waitFor(() => warnings('source_not_connected').length > 0 && warnings('pool_empty_while_publishing').length > 0, 'the other two warnings', 20_000);
  expect(warnings('source_not_connected')).toEqual([
    expect.objectContaining({ msg: 'KV source not connected', worker: '2', dpRank: 0, endpoint: deadEndpoint, mode: 'connect', since: 'start' }),
  ]);
  expect(warnings('pool_empty_while_publishing')).toEqual([
    expect.objectContaining({ msg: 'pool stays empty while its engines publish', endpoint: 'prod/wrong-size/generate', model: 'llama', workers: ['1'] }),
  ]);
  expect(warnings('pool_empty_while_publishing')[0].action).toMatch(/block size other than the pool's kvBlockSize/);
  // Once each, however long it holds: the 1 s rounds go on (a few more of them, by the relay's uptime).
  const uptime = async (): Promise<number> => ((await (await fetch(`http://${relay.metricsAddress}/status`)).json()) as StatusDocument).relay.uptimeSeconds;
  const later = (await uptime()) + 3;
  await waitFor(async () => (await uptime()) >= later, 'three more diagnostics rounds', 10_000, 100);
  expect(warnings('block_size_mismatch')).toHaveLength(1);
  expect(warnings('source_not_connected')).toHaveLength(1);
  expect(warnings('pool_empty_while_publishing')).toHaveLength(1);
  expect(lines.filter((l) => l.level >= 40 && (l.worker === '3' || l.endpoint === healthy.pubEndpoint))).toEqual([]);
}, 40_000);

test('/status and `kv-dc-relay status` show every source and pool, and the warnings', async () => {
  const healthyPool = () => consumer.catalog()?.pools.find((p) => p.descriptor.registrations.some((r) => r.canonicalModelId === 'mistral'))?.poolKey;
  await waitFor(() => (consumer.replica(healthyPool() ?? '')?.sequence ?? 0n) > 0n, 'deltas of the healthy pool', 10_000);
  const res = await fetch(`http://${relay.metricsAddress}/status`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json');
  const doc = (await res.json()) as StatusDocument;
  expect(doc.relay).toMatchObject({ dcId: 'dc-e2e', address: relay.address, relayIncarnation: relay.relay.relayIncarnation.toString() });
  const byWorker = new Map(doc.sources.map((s) => [s.worker, s]));
  expect(byWorker.get('1')).toMatchObject({ connected: true, endpoint: wrongSize.pubEndpoint, kvBlockSize: BS, receivedBlockSize: 2 * BS });
  expect(byWorker.get('1')!.drops.blockSize).toBeGreaterThan(0);
  expect(byWorker.get('2')).toMatchObject({ connected: false, endpoint: deadEndpoint, lastSequence: null, lastEventAgeSeconds: null });
  expect(byWorker.get('2')!.notConnectedSeconds).toBeGreaterThanOrEqual(10);
  const ok = byWorker.get('3')!;
  expect(ok).toMatchObject({ connected: true, endpoint: healthy.pubEndpoint, receivedBlockSize: null, drops: { malformed: 0, outOfOrder: 0, rejectedRanks: 0, overflows: 0, blockSize: 0 } });
  expect(BigInt(ok.lastSequence!)).toBeGreaterThan(0n);
  expect(ok.lastEventAgeSeconds).toBeLessThan(3);
  const pools = new Map(doc.pools.map((p) => [p.endpoint, p]));
  expect(pools.get('prod/wrong-size/generate')).toMatchObject({ model: 'llama', trackedBlocks: 0, subscribers: 0, deltaLatencyP99Ms: null });
  const served = pools.get('prod/healthy/generate')!;
  expect(served.trackedBlocks).toBeGreaterThan(0);
  expect(served.filterLoad).toBeGreaterThan(0);
  expect(served.subscribers).toBe(1);
  expect(served.deltaLatencyP99Ms).toBeGreaterThan(0);
  expect(doc.warnings.map((w) => w.check).sort()).toEqual(['block_size_mismatch', 'pool_empty_while_publishing', 'source_not_connected']);

  // --json: the same document.
  let stdout = '';
  const code = await main(['status', relay.metricsAddress!, '--json'], { stdout: new PassThrough().on('data', (b: Buffer) => (stdout += b.toString())), stderr: new PassThrough() });
  expect(code).toBe(0);
  const json = JSON.parse(stdout) as StatusDocument;
  expect(json.sources.map((s) => s.worker).sort()).toEqual(['1', '2', '3']);

  // The table, from the command as a process.
  const table = await runCli(['status', relay.metricsAddress!]);
  expect(table.code).toBe(0);
  expect(table.stdout).toMatch(/^relay dc-e2e {2}incarnation \d+ {2}gRPC 127\.0\.0\.1:\d+ {2}up /);
  expect(table.stdout).toMatch(/^SOURCE +POOL +ENDPOINT +STATE +LAST SEQ +LAST EVENT +EVENTS +GAPS +RESETS +DROPS$/m);
  expect(table.stdout).toMatch(new RegExp(`^2/0 +prod/nothing-there/generate +${deadEndpoint.replace(/\./g, '\\.')} +not connected \\(`, 'm'));
  expect(table.stdout).toMatch(/^3\/0 +prod\/healthy\/generate +tcp:\S+ +connected +\d+ +[\d.]+ s ago/m);
  expect(table.stdout).toMatch(/^POOL +MODEL +BLOCK SIZE +BLOCKS +FILTER LOAD +SUBSCRIBERS +DELTA P99$/m);
  expect(table.stdout).toMatch(/^prod\/healthy\/generate +mistral +4 +\d+ +0\.\d{3} +1 +[\d.]+ ms$/m);
  expect(table.stdout).toContain('warnings (3):');
  expect(table.stdout).toContain(`source 1/0 at ${wrongSize.pubEndpoint}: KV events dropped: the engine's block size is not the pool's kvBlockSize (pool's kvBlockSize ${BS}, engine's ${2 * BS})`);
}, 30_000);

test('/metrics: the checks that hold, and each source\'s last-event age', async () => {
  const text = await (await fetch(`http://${relay.metricsAddress}/metrics`)).text();
  expect(text).toContain('kv_dc_relay_diagnostics_active{check="source_not_connected"} 1');
  expect(text).toContain('kv_dc_relay_diagnostics_active{check="block_size_mismatch"} 1');
  expect(text).toContain('kv_dc_relay_diagnostics_active{check="pool_empty_while_publishing"} 1');
  expect(text).toMatch(/kv_dc_relay_ingest_dropped_block_size_total\{worker="1",dp_rank="0"\} [1-9]\d*/);
  const age = /kv_dc_relay_ingest_last_event_age_seconds\{worker="3",dp_rank="0"\} ([\d.e-]+)/.exec(text);
  expect(Number(age![1])).toBeLessThan(3);
  const dead = /kv_dc_relay_ingest_last_event_age_seconds\{worker="2",dp_rank="0"\} ([\d.e-]+)/.exec(text);
  expect(Number(dead![1])).toBeGreaterThanOrEqual(10);
});
