// Relay shards as real `kv-dc-relay serve` processes over a real etcd: a joining shard takes the
// pools rendezvous hashing gives it (and no others move); a killed shard's pools are served by the
// survivor within the lease TTL with a new producer generation; a consumer that follows the shards
// through etcd converges (every pool replicated, the query finds the cached prefix); and no pool is
// listed by two shards at once for as long as a lease TTL.
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import { Etcd3 } from 'etcd3';
import { main } from '../../src/cli/main';
import { ShardedRelayClient } from '../../src/client/shards';
import { endpointKey, workerKey } from '../../src/discovery/keys';
import { EtcdShardAddresses } from '../../src/discovery/shard-addresses';
import { poolIdDisplay as relayPoolKey } from '../../src/identity';
import { preferredShard } from '../../src/sharding/plan';
import { SimulatedEngine } from '../../src/sim';
import { loggedAddress, spawnCli } from '../support/cli-process';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { TcpProxy } from '../support/tcp-proxy';
import { BS, endpointConfig, workerConfig } from '../support/relay-config';
import { waitFor } from '../support/waitFor';
import { tokenRange } from '../e2e/harness';

const PREFIX = 'kv-dc-relay/shards/';
const TTL_S = 2;
/** Pools; the first ENGINES have a simulated engine, the others a publisher address where nothing listens. */
const POOLS = 12;
const ENGINES = 2;
const START_MS = 60_000;

interface Shard {
  child: ChildProcess;
  address: string;
  id: string;
}

describeWithEtcd('relay shards', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  let dir: string;
  const engines: SimulatedEngine[] = [];
  const shards: Shard[] = [];
  let client: ShardedRelayClient | undefined;

  beforeAll(async () => {
    etcd = await new EtcdServer().start();
    kv = new Etcd3({ hosts: etcd.endpoint });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-shards-'));
    for (let i = 0; i < POOLS; i++) {
      const triple = { namespace: 'prod', component: `c${i}`, endpoint: 'generate' };
      await kv.put(endpointKey(PREFIX, triple)).value(JSON.stringify(endpointConfig([], { component: `c${i}`, model: { name: `m${i}` } })));
      let worker: Record<string, unknown> = { id: i + 1, kvEvents: { endpoint: `tcp://127.0.0.1:9` } };
      if (i < ENGINES) {
        const engine = await new SimulatedEngine({ modelName: 'llama' }).start();
        engines.push(engine);
        worker = workerConfig(i + 1, engine);
      }
      await kv.put(workerKey(PREFIX, triple, BigInt(i + 1))).value(JSON.stringify(worker));
    }
  });
  afterAll(async () => {
    client?.close();
    await Promise.all(shards.map((s) => stop(s.child)));
    await Promise.allSettled(engines.map((e) => e.stop()));
    kv.close();
    await etcd.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function startShard(name: string, etcdEndpoint = etcd.endpoint): Promise<Shard> {
    const file = path.join(dir, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify({
      dcId: 'dc-shards',
      bind: '127.0.0.1:0',
      expectedUniqueBlocks: 4096,
      timing: { publicationDelayMs: 1 },
      discovery: { etcd: { endpoints: [etcdEndpoint], prefix: PREFIX, leaseTtlSeconds: TTL_S } },
    }));
    const child = spawnCli(['serve', '--config', file], ['ignore', 'ignore', 'pipe']);
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    await waitFor(() => child.exitCode !== null || stderr.includes('shard lease granted'), `shard ${name} to join`, START_MS, 20);
    if (child.exitCode !== null) throw new Error(`shard ${name} exited ${child.exitCode}: ${stderr}`);
    const address = loggedAddress(stderr, 'listening')!;
    const entries = await kv.getAll().prefix(`${PREFIX}shards/`).strings();
    const id = Object.entries(entries).find(([, v]) => JSON.parse(v).address === address)![0].slice(`${PREFIX}shards/`.length);
    const shard = { child, address, id };
    shards.push(shard);
    return shard;
  }

  /** Pool keys a shard's catalog lists (as its client sees them). */
  const listed = (shard: Shard): string[] => client?.shard(shard.address)?.catalog()?.pools.map((p) => p.poolKey) ?? [];

  test('join rebalances, a killed shard’s pools move within the TTL, consumers converge, never two owners for a TTL', async () => {
    const a = await startShard('a');
    client = new ShardedRelayClient(new EtcdShardAddresses({ endpoints: [etcd.endpoint] }, PREFIX), {
      subscriberId: 'shards-test',
      backoff: { initialMs: 20, maxMs: 200 },
    });
    client.start();
    await waitFor(() => listed(a).length === POOLS, 'shard a to serve every pool', START_MS, 20);
    const all = client.catalog()!.pools.map((p) => p.poolKey);
    const relayKeys = new Map(client.catalog()!.pools.map((p) => [p.poolKey, relayPoolKey(p.descriptor.producer!.poolId!)]));
    const c0 = client.catalog()!.pools.find((p) => p.descriptor.servingEndpoint!.component === 'c0')!.poolKey;

    const overlap = watchOverlap(all);
    try {
      const prompt = tokenRange(100, 2 * BS);
      await engines[0].publish([{ type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: prompt, blockSize: BS }]);
      const depth = (): number | null | undefined => {
        const r = client!.query({ model: 'm0', tokens: prompt });
        return r.kind === 'ok' ? r.pools[0]?.matchedBlocks : undefined;
      };
      await waitFor(() => depth() === 2, 'the query to find the prefix on shard a', START_MS, 20);

      // Join: b takes exactly the pools rendezvous hashing prefers it for; nothing else moves.
      const b = await startShard('b');
      // The relay keys its claims by the pool id's display form; the client by its wire pool key.
      const forB = all.filter((key) => preferredShard(relayKeys.get(key)!, [a.id, b.id]) === b.id).sort();
      await waitFor(() => listed(b).sort().join() === forB.join() && listed(a).length === POOLS - forB.length, 'the rebalance', START_MS, 20);
      await waitFor(() => client!.catalog()?.pools.length === POOLS && all.every((k) => client!.replica(k)), 'the merged view to converge', START_MS, 20);
      // A pool that moved to b is replicated from b's first snapshot, which may precede b's replay of the engine.
      await waitFor(() => depth() === 2, 'the prefix found after the rebalance', START_MS, 20);

      // Kill the shard with more pools (the split is random; fairness is plan.test.ts's): the other takes them.
      const [victim, survivor] = forB.length * 2 >= POOLS ? [b, a] : [a, b];
      const producersOnVictim = new Set(client.catalog()!.pools.filter((p) => client!.shardOf(p.poolKey) === victim.address).map((p) => p.producerKey));
      const killedAt = Date.now();
      victim.child.kill('SIGKILL');
      await waitFor(() => listed(survivor).length === POOLS, 'the takeover', START_MS, 10);
      const takeoverMs = Date.now() - killedAt;
      expect(takeoverMs).toBeLessThan(TTL_S * 1000 + 2_000);
      // New producer generations, every pool replicated again, the prefix found again (replay from the engine).
      await waitFor(() => client!.addresses().join() === survivor.address, 'the dead shard to leave the address list', START_MS, 20);
      await waitFor(() => all.every((k) => client!.replica(k) && client!.shardOf(k) === survivor.address), 'the consumer to converge', START_MS, 20);
      expect(client.catalog()!.pools.some((p) => producersOnVictim.has(p.producerKey))).toBe(false);
      await waitFor(() => depth() === 2, 'the query after the takeover', START_MS, 20);
      expect(client.replica(c0)).toBeDefined();
      // The CLI finds the shards through etcd too.
      let out = '';
      const io = { stdout: new PassThrough().on('data', (b: Buffer) => (out += b.toString())), stderr: new PassThrough() };
      expect(await main(['query', '--etcd', etcd.endpoint, '--prefix', PREFIX, '--model', 'm0', '--tokens', prompt.join(','), '--json'], io)).toBe(0);
      expect(JSON.parse(out).pools[0].matchedBlocks).toBe(2);
    } finally {
      overlap.stop();
    }
    expect(overlap.maxMs()).toBeLessThan(TTL_S * 1000);
  }, 240_000);

  test('a shard cut off from etcd stops serving before its pools are taken over, and rejoins after', async () => {
    await Promise.all(shards.splice(0).map((s) => stop(s.child)));
    client?.close();
    const proxy = await new TcpProxy({ host: '127.0.0.1', port: etcd.clientPort }).start();
    try {
      const a = await startShard('a2');
      const b = await startShard('b2', proxy.endpoint);
      client = new ShardedRelayClient([a.address, b.address], { subscriberId: 'shards-test', backoff: { initialMs: 20, maxMs: 200 } });
      client.start();
      await waitFor(() => client!.catalog()?.pools.length === POOLS, 'the merged catalog', START_MS, 20);
      const all = client.catalog()!.pools.map((p) => p.poolKey);
      const onB = listed(b);
      const overlap = watchOverlap(all);
      try {
        proxy.partition();
        const cutAt = Date.now();
        // b fences itself (its lease unconfirmed) and a claims everything once b's lease expired.
        await waitFor(() => listed(b).length === 0, 'the cut-off shard to stop serving', START_MS, 10);
        const fencedMs = Date.now() - cutAt;
        await waitFor(() => listed(a).length === POOLS, 'the takeover', START_MS, 10);
        expect(fencedMs).toBeLessThan(TTL_S * 1000);
        expect(Date.now() - cutAt).toBeLessThan(TTL_S * 1000 + 3_000);
        // Reconnected, b registers a new lease and takes its share back.
        proxy.restore();
        await waitFor(() => listed(b).sort().join() === onB.sort().join(), 'the shard to rejoin with its share', START_MS, 20);
        await waitFor(() => listed(a).length === POOLS - onB.length, 'the other shard to hand it over', START_MS, 20);
      } finally {
        overlap.stop();
      }
      expect(overlap.maxMs()).toBeLessThan(TTL_S * 1000);
    } finally {
      await proxy.close();
    }
  }, 240_000);

  /** How long any pool stays listed by two shards at once (sampled every 10 ms). */
  function watchOverlap(pools: string[]): { stop(): void; maxMs(): number } {
    let max = 0;
    const since = new Map<string, number>();
    const timer = setInterval(() => {
      const now = Date.now();
      for (const key of pools) {
        if (shards.filter((s) => listed(s).includes(key)).length > 1) {
          if (!since.has(key)) since.set(key, now);
          max = Math.max(max, now - since.get(key)!);
        } else since.delete(key);
      }
    }, 10);
    return { stop: () => clearInterval(timer), maxMs: () => max };
  }
});

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
