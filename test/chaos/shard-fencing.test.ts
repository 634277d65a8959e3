// "Never two owners for longer than a TTL" under injected faults between one relay shard and a real
// etcd: its keepalives lost while its watch still works (etcd-fault-proxy.ts), a claim answer held
// back past a fence, a pass stuck on an etcd call with a 5 s deadline, and a full partition (TCP
// proxy) during which a sibling starts. Shards are whole relays in this process (startRelay), and a
// shard "serves" a pool while its producer's catalog lists it. Each test samples every 10 ms how long
// any pool is listed by two shards at once. Timing-sensitive (a 2 s TTL), so it runs alone.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import { Etcd3 } from 'etcd3';
import { endpointSchema } from '../../src/config/schema';
import { endpointKey, ownerKey, shardKey, workerKey } from '../../src/discovery/keys';
import { poolIdDisplay } from '../../src/identity';
import { createLogger } from '../../src/log';
import { buildDeployment } from '../../src/producer/deployment';
import { startRelay, type RunningRelay } from '../../src/server';
import { preferredShard } from '../../src/sharding/plan';
import { EtcdFaultProxy } from '../support/etcd-fault-proxy';
import { describeWithEtcd, EtcdServer } from '../support/etcd';
import { runAlone } from '../support/exclusive';
import { endpointConfig } from '../support/relay-config';
import { TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/waitFor';

const TTL_S = 2;
const TTL_MS = TTL_S * 1000;
const DC = 'dc-fencing';
/** Generous: startRelay, a lease expiry (TTL plus etcd's expiry check) and a watch on a loaded box. */
const WAIT_MS = 20_000;

interface Shard {
  relay: RunningRelay;
  id: string;
  logs(): string;
  /** Pool keys the shard's producer lists now. */
  served(): string[];
}

runAlone();

describeWithEtcd('shard fencing under faults', () => {
  let etcd: EtcdServer;
  let kv: Etcd3;
  let dir: string;
  let prefixes = 0;
  let workerIds = 0;
  const shards: Shard[] = [];
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    etcd = await new EtcdServer().start();
    kv = new Etcd3({ hosts: etcd.endpoint });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-fencing-'));
  });
  afterEach(async () => {
    await Promise.all(shards.splice(0).map((s) => s.relay.shutdown()));
    await Promise.all(closers.splice(0).map((close) => close()));
  });
  afterAll(async () => {
    kv.close();
    await etcd.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const nextPrefix = (): string => `kv-dc-relay/fencing-${++prefixes}/`;

  async function faultProxy(): Promise<EtcdFaultProxy> {
    const proxy = await new EtcdFaultProxy(etcd.endpoint).start();
    closers.push(() => proxy.close());
    return proxy;
  }

  async function startShard(prefix: string, etcdEndpoint: string, etcdOver: Record<string, unknown> = {}): Promise<Shard> {
    const file = path.join(dir, `shard-${shards.length}-${prefixes}.json`);
    fs.writeFileSync(file, JSON.stringify({
      dcId: DC,
      bind: '127.0.0.1:0',
      expectedUniqueBlocks: 1024,
      timing: { publicationDelayMs: 1 },
      discovery: { etcd: { endpoints: [etcdEndpoint], prefix, leaseTtlSeconds: TTL_S, ...etcdOver } },
    }));
    let text = '';
    const logs = new PassThrough().on('data', (b: Buffer) => (text += b.toString()));
    const relay = await startRelay({ configFile: file, logger: createLogger({ destination: logs }) });
    const shard: Shard = {
      relay,
      id: relay.discovery!.shardId,
      logs: () => text,
      served: () => relay.producer.catalog().snapshot.pools.map((p) => poolIdDisplay(p.producer!.poolId!)).sort(),
    };
    shards.push(shard);
    await waitFor(() => text.includes('shard lease granted'), 'the shard lease', WAIT_MS, 10);
    return shard;
  }

  /** Endpoint entries (one worker each, nothing listening at its publisher) of the named components. */
  async function addPools(prefix: string, components: string[]): Promise<void> {
    for (const component of components) {
      const triple = { namespace: 'prod', component, endpoint: 'generate' };
      await kv.put(endpointKey(prefix, triple)).value(JSON.stringify(endpointConfig([], { component, model: { name: `m-${component}` } })));
      const id = ++workerIds;
      await kv.put(workerKey(prefix, triple, BigInt(id))).value(JSON.stringify({ id, kvEvents: { endpoint: 'tcp://127.0.0.1:9' } }));
    }
  }

  /** The key the relay gives the pool of a component's endpoint. */
  function poolKeyOf(component: string): string {
    const endpoint = endpointSchema.parse(endpointConfig([{ id: 1, kvEvents: { endpoint: 'tcp://127.0.0.1:9' } }], { component, model: { name: `m-${component}` } }));
    return buildDeployment(DC, [endpoint]).pools[0].key;
  }

  /** `count` new component names whose pools rendezvous hashing gives to `shard` among `live`. */
  function componentsFor(shard: string, live: string[], count: number): string[] {
    const out: string[] = [];
    for (let i = 0; out.length < count; i++) {
      const component = `p${prefixes}-${i}`;
      if (preferredShard(poolKeyOf(component), live) === shard) out.push(component);
    }
    return out;
  }

  /** The longest time any pool was listed by two of the shards at once (sampled every 10 ms). */
  function watchOverlap(): { stop(): number } {
    let max = 0;
    const since = new Map<string, number>();
    const timer = setInterval(() => {
      const now = Date.now();
      const count = new Map<string, number>();
      for (const s of shards) for (const key of s.served()) count.set(key, (count.get(key) ?? 0) + 1);
      for (const [key, n] of count) if (n > 1 && !since.has(key)) since.set(key, now);
      for (const [key, start] of since) {
        if ((count.get(key) ?? 0) > 1) max = Math.max(max, now - start);
        else since.delete(key);
      }
    }, 10);
    return {
      stop: () => {
        clearInterval(timer);
        return max;
      },
    };
  }

  const leaseGone = async (prefix: string, shard: Shard): Promise<boolean> => (await kv.get(shardKey(prefix, shard.id)).string()) === null;

  /** Four pools and one shard (through `etcdEndpoint`) serving all of them. */
  async function loneShard(prefix: string, etcdEndpoint: string, etcdOver: Record<string, unknown> = {}): Promise<Shard> {
    await addPools(prefix, ['a', 'b', 'c', 'd']);
    const shard = await startShard(prefix, etcdEndpoint, etcdOver);
    await waitFor(() => shard.served().length === 4, 'the lone shard to serve every pool', WAIT_MS, 10);
    return shard;
  }

  /** `a`, fenced and back in touch with etcd, learns its lease expired, registers again and takes back its share of `all`. */
  async function rejoin(a: Shard, b: Shard, all: string[]): Promise<void> {
    const forA = all.filter((key) => preferredShard(key, [a.id, b.id]) === a.id);
    await waitFor(() => (a.logs().match(/shard lease granted/g) ?? []).length === 2, 'a new lease', WAIT_MS, 10);
    await waitFor(() => a.served().join() === forA.join() && b.served().length === all.length - forA.length, 'the rejoin', WAIT_MS, 10);
  }

  test('keepalives lost, watch working: a lone shard stops serving within the TTL; a sibling started after takes over; it rejoins after', async () => {
    const prefix = nextPrefix();
    const proxy = await faultProxy();
    const a = await loneShard(prefix, proxy.endpoint);
    const all = a.served();
    const overlap = watchOverlap();

    proxy.dropRequests('LeaseKeepAlive');
    const blockedAt = Date.now();
    await waitFor(() => a.served().length === 0, 'the fenced shard to stop serving', WAIT_MS, 5);
    expect(Date.now() - blockedAt).toBeLessThan(TTL_MS);
    // Its lease expires in etcd; a shard started now claims everything.
    await waitFor(() => leaseGone(prefix, a), 'the lease to expire', WAIT_MS, 20);
    const b = await startShard(prefix, etcd.endpoint);
    await waitFor(() => b.served().length === 4, 'the new shard to take every pool', WAIT_MS, 10);
    expect(a.served()).toEqual([]);

    // Keepalives pass again: etcd answers that the lease expired; a new one, and its share back.
    proxy.release('LeaseKeepAlive');
    await rejoin(a, b, all);
    expect(overlap.stop()).toBeLessThan(TTL_MS);
  }, 90_000);

  test('loneShardKeepsServing: the lone shard serves on while unconfirmed, drops a pool etcd shows as another’s, and stops when a sibling appears', async () => {
    const prefix = nextPrefix();
    const proxy = await faultProxy();
    const a = await loneShard(prefix, proxy.endpoint, { loneShardKeepsServing: true });
    const overlap = watchOverlap();

    proxy.dropRequests('LeaseKeepAlive');
    await waitFor(() => a.logs().includes('no other shard is live, so the pools stay served'), 'the lone shard to keep serving', WAIT_MS, 10);
    expect(a.served()).toHaveLength(4);
    // Unconfirmed, its held claims are still checked against the mirror on every change.
    const victim = poolKeyOf('a');
    await kv.put(ownerKey(prefix, victim)).value('another-shard:1');
    await waitFor(() => a.served().length === 3 && !a.served().includes(victim), 'the pool claimed elsewhere to stop being served', WAIT_MS, 5);
    await kv.delete().key(ownerKey(prefix, victim));

    // A sibling registers: the lone case is over at once, before the sibling can claim anything of a's.
    const b = await startShard(prefix, etcd.endpoint);
    await waitFor(() => a.served().length === 0, 'the shard to stop serving once a sibling is live', WAIT_MS, 5);
    await waitFor(() => b.served().length === 4, 'the sibling to take every pool', WAIT_MS, 10);
    expect(overlap.stop()).toBeLessThan(TTL_MS);
  }, 90_000);

  test('a claim answered after the fence is not served, even under the same lease id', async () => {
    const prefix = nextPrefix();
    const proxy = await faultProxy();
    await addPools(prefix, ['a', 'b', 'c', 'd']);
    const overlap = watchOverlap();
    // etcd applies the lone shard's four claims (its first pass); their answers wait in the proxy.
    proxy.holdResponses('Txn');
    const a = await startShard(prefix, proxy.endpoint);
    await waitFor(() => proxy.holding('Txn') === 4, 'the four claims to be applied and held', WAIT_MS, 5);
    proxy.dropRequests('LeaseKeepAlive');
    // A sibling starts while a is cut off from keepalives; it claims once a's lease expired.
    const b = await startShard(prefix, etcd.endpoint);
    await waitFor(() => b.served().length === 4, 'the sibling to own every pool', WAIT_MS, 10);

    proxy.release('Txn');
    // The answers reached a before their 5 s deadline (else this test would not show anything).
    expect(proxy.delivered('Txn')).toBe(4);
    await waitFor(() => /claims answered after the shard was fenced|pools claimed/.test(a.logs()), 'a to read the answers', WAIT_MS, 5);
    expect(a.served()).toEqual([]);
    expect(a.relay.discovery!.servedPools()).toEqual([]);
    expect(overlap.stop()).toBeLessThan(TTL_MS);
  }, 90_000);

  test('the fence does not wait behind a pass stuck on an etcd call', async () => {
    const prefix = nextPrefix();
    const proxy = await faultProxy();
    const a = await startShard(prefix, proxy.endpoint);
    const b = await startShard(prefix, etcd.endpoint);
    await waitFor(() => a.relay.discovery!.metrics().liveShards === 2 && b.relay.discovery!.metrics().liveShards === 2, 'the shards to see each other', WAIT_MS, 10);
    const [first, second, third] = componentsFor(a.id, [a.id, b.id], 3);
    await addPools(prefix, [first, second]);
    await waitFor(() => a.served().length === 2, 'a to serve its two pools', WAIT_MS, 10);
    const overlap = watchOverlap();

    // a's next claim hangs (its etcd deadline is 5 s, longer than the TTL); then its keepalives are lost.
    proxy.holdResponses('Txn');
    await addPools(prefix, [third]);
    await waitFor(() => proxy.holding('Txn') === 1, 'a’s claim to hang', WAIT_MS, 5);
    proxy.dropRequests('LeaseKeepAlive');
    const blockedAt = Date.now();
    await waitFor(() => a.served().length === 0, 'the fenced shard to stop serving', WAIT_MS, 5);
    expect(Date.now() - blockedAt).toBeLessThan(TTL_MS);
    expect(proxy.holding('Txn')).toBe(1); // still stuck: the fence did not wait for it
    expect(await leaseGone(prefix, a)).toBe(false); // stopped before etcd could hand its pools over

    await waitFor(() => b.served().length === 3, 'the sibling to take every pool', WAIT_MS, 10);
    proxy.release('Txn');
    expect(overlap.stop()).toBeLessThan(TTL_MS);
  }, 90_000);

  test('a sibling starting during a partition: the cut-off lone shard stops within the TTL, serves nothing the sibling owns, rejoins after', async () => {
    const prefix = nextPrefix();
    const proxy = await new TcpProxy({ host: '127.0.0.1', port: etcd.clientPort }).start();
    closers.push(() => proxy.close());
    const a = await loneShard(prefix, proxy.endpoint);
    const all = a.served();
    const overlap = watchOverlap();

    proxy.partition();
    const cutAt = Date.now();
    const b = await startShard(prefix, etcd.endpoint);
    await waitFor(() => a.served().length === 0, 'the cut-off shard to stop serving', WAIT_MS, 5);
    expect(Date.now() - cutAt).toBeLessThan(TTL_MS);
    await waitFor(() => b.served().length === 4, 'the sibling to take every pool', WAIT_MS, 10);

    proxy.restore();
    await rejoin(a, b, all);
    expect(overlap.stop()).toBeLessThan(TTL_MS);
  }, 90_000);
});
