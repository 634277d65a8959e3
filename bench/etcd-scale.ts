// Scale-out on etcd at 1 000 workers / 100 pools, with a real etcd and relays as `kv-dc-relay serve`
// processes (README "Discovery from etcd", "Relay shards"):
// - registration → catalog: 100 endpoint entries, then 1 000 worker entries written as fast as etcd
//   takes them (10 per endpoint, under one lease per endpoint); per pool, the time from the put of its
//   first worker to the pool in a consumer's catalog; then, at that scale, one more worker of a new
//   endpoint, repeated: the time from its put to its pool in the catalog. The relay's CPU time per
//   registered worker comes from /proc (steadier than wall clock on the shared VM).
// - shard death → pools served elsewhere: two shards split the 100 pools; one is SIGKILLed; the time
//   until the other's catalog lists every pool, with the lease TTL it includes.
// The workers' KV-event sources bind (the relay binds a SUB per worker on an OS-chosen port), so no
// source dials a missing publisher; ingest is not what is measured here.
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Etcd3, type Lease } from 'etcd3';
import { ShardedRelayClient } from '../src/client/shards';
import { endpointKey, workerKey } from '../src/discovery/keys';
import { EtcdServer, etcdAvailable } from '../test/support/etcd-server';
import type { BenchResult } from './support/result';
import { processCpuMs } from './support/process';

const PREFIX = 'kv-dc-relay/bench/';
const ENDPOINTS = Number(process.env.BENCH_ETCD_ENDPOINTS ?? 100);
const WORKERS_PER_ENDPOINT = 10;
/** Shortest lease etcd honours (it raises shorter ones to ~2 s). */
const TTL_S = 2;
const SINGLE_REGISTRATIONS = 10;
const WAIT_MS = 120_000;

interface RelayProcess {
  child: ChildProcess;
  address: string;
  stop(): Promise<void>;
}

function triple(i: number): { namespace: string; component: string; endpoint: string } {
  return { namespace: 'bench', component: `c${i}`, endpoint: 'generate' };
}

function endpointValue(i: number): string {
  return JSON.stringify({ ...triple(i), model: { name: `model-${i}`, kvBlockSize: 16 }, workerType: 'aggregated' });
}

function workerValue(id: number): string {
  return JSON.stringify({ id, totalKvBlocks: 1000, maxNumSeqs: 64, kvEvents: { endpoint: 'tcp://127.0.0.1:0', mode: 'bind', allowedPeers: ['127.0.0.1'] } });
}

async function startRelay(dir: string, name: string, etcd: string): Promise<RelayProcess> {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({
    dcId: 'dc-bench',
    bind: '127.0.0.1:0',
    expectedUniqueBlocks: 1024,
    discovery: { etcd: { endpoints: [etcd], prefix: PREFIX, leaseTtlSeconds: TTL_S } },
  }));
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'src', 'cli', 'main.js'), 'serve', '--config', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => {
      stderr += b.toString();
      const line = stderr.split('\n').find((l) => l.includes('"msg":"shard lease granted"'));
      const listening = stderr.split('\n').find((l) => l.includes('"msg":"listening"'));
      if (line && listening) resolve((JSON.parse(listening) as { address: string }).address);
      if (stderr.length > 1_000_000) stderr = stderr.slice(-100_000);
    });
    child.once('exit', (code) => reject(new Error(`relay exited ${code}: ${stderr.slice(-2000)}`)));
  });
  return {
    child,
    address,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resolves when `probe` holds, checked on every catalog change of the client. */
function until(client: ShardedRelayClient, probe: () => boolean, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!probe()) return;
      clearTimeout(timer);
      client.off('changed', check);
      resolve(performance.now());
    };
    const timer = setTimeout(() => {
      client.off('changed', check);
      reject(new Error(`timed out waiting for ${what}`));
    }, WAIT_MS);
    client.on('changed', check);
    check();
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** The model names in a client's merged catalog. */
function models(client: ShardedRelayClient): Set<string> {
  return new Set((client.catalog()?.pools ?? []).flatMap((p) => p.descriptor.registrations.map((r) => r.canonicalModelId)));
}

function observer(addresses: string[]): ShardedRelayClient {
  // Catalog only: no pool replicas (each would cost a snapshot download).
  const client = new ShardedRelayClient(addresses, { subscriberId: 'bench-etcd', pools: () => false, servingLoad: false });
  client.start();
  return client;
}

export async function run(): Promise<BenchResult[]> {
  if (!etcdAvailable) throw new Error('the etcd binary is not installed (apt-get install etcd-server)');
  const etcd = await new EtcdServer().start();
  const kv = new Etcd3({ hosts: etcd.endpoint });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-bench-etcd-'));
  const relays: RelayProcess[] = [];
  const leases: Lease[] = [];
  const clients: ShardedRelayClient[] = [];
  try {
    for (let i = 0; i < ENDPOINTS; i++) await kv.put(endpointKey(PREFIX, triple(i))).value(endpointValue(i));
    const relay = await startRelay(dir, 'a', etcd.endpoint);
    relays.push(relay);
    const client = observer([relay.address]);
    clients.push(client);
    await until(client, () => client.catalog() !== undefined, 'the first catalog');

    // 1 000 registrations in a burst: per pool, first worker's put → pool in the catalog.
    const cpuBefore = processCpuMs(relay.child.pid);
    const firstPut = new Array<number>(ENDPOINTS);
    const seen = new Array<number>(ENDPOINTS);
    const onChange = (): void => {
      const now = performance.now();
      for (const name of models(client)) {
        const i = Number(name.slice('model-'.length));
        if (seen[i] === undefined) seen[i] = now;
      }
    };
    client.on('changed', onChange);
    const burstStart = performance.now();
    let id = 1;
    for (let w = 0; w < WORKERS_PER_ENDPOINT; w++) {
      await Promise.all(
        Array.from({ length: ENDPOINTS }, async (_, i) => {
          const lease = w === 0 ? kv.lease(60) : leases[i];
          if (w === 0) leases[i] = lease;
          const workerId = id++;
          await lease.put(workerKey(PREFIX, triple(i), BigInt(workerId))).value(workerValue(workerId));
          if (w === 0) firstPut[i] = performance.now();
        }),
      );
    }
    const burstPutMs = performance.now() - burstStart;
    await until(client, () => client.catalog()!.pools.length === ENDPOINTS, 'every pool in the catalog');
    // Every worker is in: the last pool update after the last put settles within the wait below.
    const allInMs = performance.now() - burstStart;
    client.off('changed', onChange);
    const cpuBurst = (processCpuMs(relay.child.pid) ?? NaN) - (cpuBefore ?? NaN);
    const perPool = firstPut.map((t, i) => seen[i] - t).sort((a, b) => a - b);

    // At that scale, one more worker on a new endpoint at a time.
    const single: number[] = [];
    for (let k = 0; k < SINGLE_REGISTRATIONS; k++) {
      const i = ENDPOINTS + k;
      await kv.put(endpointKey(PREFIX, triple(i))).value(endpointValue(i));
      await new Promise((r) => setTimeout(r, 200));
      const start = performance.now();
      await leases[0].put(workerKey(PREFIX, triple(i), BigInt(id))).value(workerValue(id));
      id++;
      single.push((await until(client, () => models(client).has(`model-${i}`), `model-${i}`)) - start);
    }
    single.sort((a, b) => a - b);
    for (let k = 0; k < SINGLE_REGISTRATIONS; k++) await kv.delete().key(endpointKey(PREFIX, triple(ENDPOINTS + k)));
    await until(client, () => client.catalog()!.pools.length === ENDPOINTS, 'the extra pools withdrawn');

    // Shard death: b joins and takes its share; then b is killed.
    const b = await startRelay(dir, 'b', etcd.endpoint);
    relays.push(b);
    const both = observer([relay.address, b.address]);
    clients.push(both);
    const onB = (): number => both.shard(b.address)?.catalog()?.pools.length ?? 0;
    const onA = (): number => both.shard(relay.address)?.catalog()?.pools.length ?? 0;
    await until(both, () => onB() > 0 && onA() + onB() === ENDPOINTS, 'the rebalance');
    const moved = onB();
    const killedAt = performance.now();
    b.child.kill('SIGKILL');
    const takeoverMs = (await until(both, () => onA() === ENDPOINTS, 'the takeover')) - killedAt;

    const note = `etcd 3.4 (Debian), relay processes, shard lease TTL ${TTL_S} s`;
    return [
      { name: `register→catalog per pool, p50 (burst of ${ENDPOINTS * WORKERS_PER_ENDPOINT} workers / ${ENDPOINTS} pools)`, value: percentile(perPool, 50), unit: 'ms', note },
      { name: 'register→catalog per pool, p99 (same burst)', value: percentile(perPool, 99), unit: 'ms', note: `puts took ${burstPutMs.toFixed(0)} ms; all ${ENDPOINTS} pools in after ${allInMs.toFixed(0)} ms` },
      { name: 'relay CPU per registered worker (burst)', value: (cpuBurst * 1000) / (ENDPOINTS * WORKERS_PER_ENDPOINT), unit: 'µs', note: 'from /proc; includes binding each worker’s SUB socket' },
      { name: `one more worker at ${ENDPOINTS * WORKERS_PER_ENDPOINT} workers: register→catalog, median of ${SINGLE_REGISTRATIONS}`, value: percentile(single, 50), unit: 'ms', note: `max ${single[single.length - 1].toFixed(1)} ms` },
      { name: `shard killed → its ${moved} of ${ENDPOINTS} pools served by the other`, value: takeoverMs, unit: 'ms', note: `includes the lease expiry (TTL ${TTL_S} s, fence at 5/6 TTL)` },
    ];
  } finally {
    for (const c of clients) c.close();
    await Promise.all(relays.map((r) => r.stop()));
    for (const l of leases) l.release();
    kv.close();
    await etcd.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
