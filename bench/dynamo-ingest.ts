// Dynamo's NATS event plane at capacity (issue 27 item 4): a `kv-dc-relay serve` process on a Dynamo
// deployment (cards in a real etcd, KV events on a real nats-server) takes 1 and 8 workers' small
// RouterEvents (1 event × 4 blocks per envelope: stores of fresh chains and their removals) that a
// firehose process publishes as fast as NATS takes them; the value is the messages/s the relay took
// over the window (its own kv_dc_relay_ingest_events_total: one event per message), against a bare
// @nats-io/transport-node subscriber process on the same subject in the same run. Relay and bare runs
// alternate ROUNDS times (the machine is shared); the ratio is the median of each round's ratio.
// Compare with bench/small-messages.ts (the ZMQ path against a bare zeromq.js SUB).
import { spawn, type ChildProcess } from 'child_process';
import * as path from 'path';
import { Etcd3 } from 'etcd3';
import { EtcdServer, etcdAvailable } from '../test/support/etcd-server';
import { NatsServer, natsAvailable } from '../test/support/nats-server';
import { processCpuMs } from './support/process';
import { metricSum, scrape, startRelayProcess, waitForLine } from './support/relay-process';
import type { BenchResult } from './support/result';
import { median, round } from './support/timing';
import { FIREHOSE_BLOCKS } from './support/nats-firehose';

const SOURCES = [1, 8];
const WINDOW = { warmupMs: 1_000, measureMs: Number(process.env.DYNAMO_INGEST_MS ?? 3_000) };
const ROUNDS = Number(process.env.DYNAMO_INGEST_ROUNDS ?? 3);
const SUBJECT = 'namespace.bench.component.backend.kv-events';
/** The relay's limits.ingestThreads (0 = the plane on the main thread); unset = the relay's default (its own thread). */
const INGEST_THREADS = process.env.DYNAMO_INGEST_THREADS === undefined ? undefined : Number(process.env.DYNAMO_INGEST_THREADS);
/** What the server buffers for a subscriber slower than the firehose before cutting it off. */
const MAX_PENDING_BYTES = 512 * 1024 * 1024;

function firehose(url: string, sources: number): { child: ChildProcess; ready: Promise<string>; stop(): Promise<void> } {
  const child = spawn(process.execPath, [path.join(__dirname, 'support', 'nats-firehose.js'), url, SUBJECT, String(sources)], { stdio: ['pipe', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    ready: waitForLine(child, (l) => (l.includes('ready') ? l : undefined)),
    stop: async () => {
      child.stdin!.end();
      await exited;
    },
  };
}

async function bareRate(url: string, sources: number): Promise<{ perSecond: number; cpuUs: number }> {
  const script = `
    const { connect } = require(${JSON.stringify(require.resolve('@nats-io/transport-node'))});
    let n = 0;
    (async () => {
      const nc = await connect({ servers: process.argv[1] });
      nc.subscribe(${JSON.stringify(SUBJECT)}, { callback: (err, m) => { if (m.data.length > 0) n++; } });
      await nc.flush();
      process.stderr.write('{"ready":true}\\n');
    })();
    process.stdin.on('data', () => process.stderr.write(JSON.stringify({ n }) + '\\n'));`;
  const child = spawn(process.execPath, ['-e', script, url], { stdio: ['pipe', 'ignore', 'pipe'] });
  const count = async (): Promise<number> => {
    const line = waitForLine(child, (l) => (l.startsWith('{"n"') ? l : undefined));
    child.stdin!.write('\n');
    const n = (JSON.parse(await line) as { n: number }).n;
    child.stderr!.removeAllListeners('data');
    return n;
  };
  await waitForLine(child, (l) => (l.includes('ready') ? l : undefined));
  child.stderr!.removeAllListeners('data');
  const pub = firehose(url, sources);
  try {
    await pub.ready;
    await new Promise((r) => setTimeout(r, WINDOW.warmupMs));
    const n0 = await count();
    const cpu0 = processCpuMs(child.pid);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, WINDOW.measureMs));
    const n1 = await count();
    const cpu1 = processCpuMs(child.pid);
    return { perSecond: (n1 - n0) / ((performance.now() - t0) / 1000), cpuUs: cpu0 === undefined || cpu1 === undefined ? NaN : ((cpu1 - cpu0) * 1000) / (n1 - n0) };
  } finally {
    await pub.stop();
    child.kill('SIGTERM');
  }
}

async function relayRate(url: string, etcdEndpoint: string, sources: number): Promise<{ perSecond: number; cpuUs: number; mainUs: number; gaps: number; applied: number }> {
  const relay = await startRelayProcess({
    dcId: 'bench',
    bind: '127.0.0.1:0',
    metricsBind: '127.0.0.1:0',
    expectedUniqueBlocks: 1_048_576,
    discovery: { dynamo: { etcd: { endpoints: [etcdEndpoint] }, nats: { servers: [url] } } },
    ...(INGEST_THREADS === undefined ? {} : { limits: { ingestThreads: INGEST_THREADS } }),
  });
  const totals = async () => {
    const text = await scrape(relay.metricsAddress);
    return { events: metricSum(text, 'kv_dc_relay_ingest_events_total'), gaps: metricSum(text, 'kv_dc_relay_dynamo_gaps_total'), applied: metricSum(text, 'kv_dc_relay_pool_events_applied_total'), workers: metricSum(text, 'kv_dc_relay_dynamo_workers') };
  };
  const pub = firehose(url, sources);
  try {
    // The deployment read (the relay knows every worker) before the firehose starts.
    for (let i = 0; (await totals()).workers < sources; i++) {
      if (i > 200) throw new Error(`the relay did not read the deployment\n${relay.lastLog()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await pub.ready;
    await new Promise((r) => setTimeout(r, WINDOW.warmupMs));
    const before = await totals();
    const cpu0 = relay.cpuMs();
    const main0 = relay.threadCpuMs()?.main;
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, WINDOW.measureMs));
    const after = await totals();
    const cpu1 = relay.cpuMs();
    const main1 = relay.threadCpuMs()?.main;
    const seconds = (performance.now() - t0) / 1000;
    const events = after.events - before.events;
    return {
      perSecond: events / seconds,
      cpuUs: cpu0 === undefined || cpu1 === undefined ? NaN : ((cpu1 - cpu0) * 1000) / events,
      mainUs: main0 === undefined || main1 === undefined ? NaN : ((main1 - main0) * 1000) / events,
      gaps: after.gaps - before.gaps,
      applied: (after.applied - before.applied) / seconds,
    };
  } finally {
    await pub.stop();
    await relay.stop();
  }
}

/** Cards of `sources` aggregated workers (ids 1..sources) on bench/backend/generate, under one lease. */
async function registerWorkers(kv: Etcd3, sources: number): Promise<() => Promise<void>> {
  const lease = kv.lease(60);
  await lease.grant();
  for (let id = 1; id <= sources; id++) {
    const base = { namespace: 'bench', component: 'backend', endpoint: 'generate', instance_id: id };
    const card = { display_name: 'bench', kv_cache_block_size: 16, worker_type: 'aggregated', needs: [], runtime_config: { total_kv_blocks: 1000 } };
    await lease.put(`v1/instances/bench/backend/generate/${id.toString(16)}`).value(JSON.stringify({ type: 'Endpoint', ...base, transport: { tcp: '127.0.0.1:1' } }));
    await lease.put(`v1/mdc/bench/backend/generate/${id.toString(16)}`).value(JSON.stringify({ type: 'Model', ...base, card_json: card }));
  }
  return () => lease.revoke();
}

export async function run(): Promise<BenchResult[]> {
  if (!natsAvailable || !etcdAvailable) throw new Error('dynamo-ingest needs nats-server and etcd (apt-get install nats-server etcd-server)');
  const [etcd, nats] = await Promise.all([new EtcdServer().start(), new NatsServer({ maxPendingBytes: MAX_PENDING_BYTES }).start()]);
  const kv = new Etcd3({ hosts: etcd.endpoint });
  const results: BenchResult[] = [];
  try {
    for (const n of SOURCES) {
      const unregister = await registerWorkers(kv, n);
      try {
        const bare: { perSecond: number; cpuUs: number }[] = [];
        const relay: Awaited<ReturnType<typeof relayRate>>[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          bare.push(await bareRate(nats.url, n));
          relay.push(await relayRate(nats.url, etcd.endpoint, n));
        }
        results.push({
          name: `messages/s taken by one relay process from Dynamo's NATS event plane, ${n} worker(s), 1 event × ${FIREHOSE_BLOCKS} blocks per envelope`,
          value: round(median(relay.map((m) => m.perSecond)), 0),
          unit: 'messages/s',
          baseline: { name: 'bare @nats-io/transport-node subscriber process, same subject and firehose', value: round(median(bare.map((b) => b.perSecond)), 0) },
          ratio: round(median(relay.map((m, i) => m.perSecond / bare[i].perSecond))),
          note:
            `goal ratio >= 0.8 (the ZMQ path's small-messages goal); event plane ${INGEST_THREADS === 0 ? 'on the main thread' : 'on its own thread'}; relay CPU ${round(median(relay.map((m) => m.cpuUs)), 1)} µs/message (main thread ${round(median(relay.map((m) => m.mainUs)), 1)}), bare ${round(median(bare.map((b) => b.cpuUs)), 1)} µs/message; ` +
            `pool applied ${round(median(relay.map((m) => m.applied)), 0)} events/s; ${relay.reduce((a, m) => a + m.gaps, 0)} publisher gaps in the windows; ` +
            `rounds (relay / bare k messages/s) ${relay.map((m, i) => `${round(m.perSecond / 1000, 1)} / ${round(bare[i].perSecond / 1000, 1)}`).join(', ')}; ` +
            `${WINDOW.measureMs / 1000} s windows after ${WINDOW.warmupMs / 1000} s warm-up, median of ${ROUNDS} alternating rounds`,
        });
      } finally {
        await unregister();
      }
    }
  } finally {
    kv.close();
    await Promise.all([etcd.stop(), nats.stop()]);
  }
  return results;
}
