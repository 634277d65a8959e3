// A relay whose deployment comes from etcd, as one shard of the datacenter's relay (README
// "Discovery from etcd", "Relay shards"). It mirrors the prefix, assembles the endpoints from their
// entries, takes part in the pool split under its lease, and hands the producer the whole
// deployment with the pools this shard serves. Every change goes through one loop, so the producer
// sees one deployment at a time, and always as a diff against the last one.
//
// Order of a hand-over, so that a pool is never served by two shards: the releasing shard stops
// serving (producer applied without the pool) before it deletes its claim; the taking shard serves
// only after its claim was created. A fenced shard (lease lost or unconfirmed) stops serving at once.
import type { Etcd3 } from 'etcd3';
import type { EtcdDiscoveryConfig } from '../config/schema';
import type { Logger } from '../log';
import type { DiscoveryMetrics } from '../metrics/registry';
import { buildDeployment, type Deployment } from '../producer/deployment';
import { claimPool, claimShard, claimValue, releasePool } from '../sharding/claims';
import { planShard } from '../sharding/plan';
import { ShardLease } from '../sharding/shard-lease';
import { assembleEndpoints, ValueCache, type Rejection } from './assemble';
import { createEtcdClient, etcdErrorText } from './etcd-client';
import { normalizePrefix, shardKey } from './keys';
import { PrefixMirror } from './mirror';
import { PassLoop } from './pass-loop';

export interface DeploymentSink {
  applyDeployment(deployment: Deployment, serves: (poolKey: string) => boolean): Promise<void>;
}

export interface EtcdDeploymentOptions {
  etcd: EtcdDiscoveryConfig;
  dcId: string;
  producer: DeploymentSink;
  /** This shard's id (unique per process) and what its etcd entry says about it. */
  shardId: string;
  shardInfo: ShardInfo;
  logger: Logger;
}

/** The value of a shard entry. */
export interface ShardInfo {
  address: string;
  dcId: string;
  relayIncarnation: string;
}

export class EtcdDeployment {
  private readonly client: Etcd3;
  private readonly prefix: string;
  private readonly mirror: PrefixMirror;
  private readonly lease: ShardLease;
  private readonly cache = new ValueCache();
  private readonly logger: Logger;
  private deployment: Deployment = { pools: [], topology: [], conflicts: [] };
  private rejected = new Map<string, string>();
  private waiting = 0;
  private live = new Set<string>();
  /** Pools this shard holds a claim on and serves → etcd revision of the claim. */
  private readonly held = new Map<string, bigint>();
  /** Claims this shard deleted → revision of the delete (until the mirror has caught up with it). */
  private readonly releasing = new Map<string, bigint>();
  private readonly passes = new PassLoop(() => this.guardedPass());
  private mirrorChanged = false;
  private closed = false;

  constructor(private readonly options: EtcdDeploymentOptions) {
    this.logger = options.logger.child({ component: 'etcd' });
    this.client = createEtcdClient(options.etcd);
    this.prefix = normalizePrefix(options.etcd.prefix);
    this.mirror = new PrefixMirror(this.client, this.prefix, this.logger);
    this.lease = new ShardLease(
      this.client,
      shardKey(this.prefix, options.shardId),
      () => JSON.stringify(options.shardInfo),
      options.etcd.leaseTtlSeconds,
      this.logger,
    );
    // Read lazily by the next pass, so a burst of watch events is assembled once, not once per event.
    this.mirror.on('change', () => {
      this.mirrorChanged = true;
      this.schedule();
    });
    this.mirror.on('stale', () => this.schedule());
    this.lease.on('granted', () => this.schedule());
    this.lease.on('confirmed', () => this.schedule());
    this.lease.on('expired', () => this.drop('the shard lease expired'));
    this.lease.on('unconfirmed', () => {
      // With a sibling that can take the pools over, exclusivity wins: stop serving before the lease
      // can expire. A lone shard keeps serving what it has (nobody else can serve it meanwhile).
      if ([...this.live].some((id) => id !== this.options.shardId)) this.drop('the shard lease is unconfirmed');
      else this.logger.warn({ pools: this.held.size }, 'the shard lease is unconfirmed; no sibling shard is live, so the pools stay served (stale)');
    });
  }

  /** Starts mirroring and the lease; both retry with backoff while etcd is unreachable. */
  start(): void {
    this.logger.info({ endpoints: this.options.etcd.endpoints, prefix: this.prefix, shard: this.options.shardId }, 'reading the deployment from etcd');
    void this.mirror.start();
    this.lease.start();
  }

  get shardId(): string {
    return this.options.shardId;
  }

  metrics(): DiscoveryMetrics {
    return {
      stale: this.mirror.stale,
      rejectedEntries: this.rejected.size,
      waitingWorkers: this.waiting,
      liveShards: this.live.size,
      deploymentPools: this.deployment.pools.length,
      servedPools: this.held.size,
    };
  }

  /** Pools this shard serves now. */
  servedPools(): string[] {
    return [...this.held.keys()].sort();
  }

  /** Stops watching and revokes the lease, so sibling shards take this shard's pools at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.mirror.close();
    await this.passes.close();
    await this.lease.close();
    this.client.close();
  }

  private readMirror(): void {
    const assembly = assembleEndpoints(this.mirror.entries, this.cache);
    this.logRejections(assembly.rejected);
    this.waiting = assembly.waiting.length;
    this.deployment = buildDeployment(this.options.dcId, assembly.endpoints);
    this.live = new Set();
    for (const key of this.mirror.entries.keys()) {
      const parsed = this.cache.key(key);
      if (parsed?.kind === 'shard') this.live.add(parsed.shardId);
    }
  }

  private logRejections(rejected: readonly Rejection[]): void {
    const next = new Map(rejected.map((r) => [r.key, r.problem]));
    for (const [key, problem] of next) {
      if (this.rejected.get(key) !== problem) this.logger.error({ key: this.prefix + key, problem }, 'discovery entry rejected; the rest of the deployment is kept');
    }
    this.rejected = next;
  }

  /** Runs a pass now, or once more after the running one. */
  private schedule(): void {
    if (!this.closed) this.passes.schedule();
  }

  private async guardedPass(): Promise<void> {
    try {
      await this.pass();
    } catch (err) {
      // A failed claim or release is retried on the next change or the next lease event.
      this.logger.warn({ err: etcdErrorText(err) }, 'shard reconciliation failed; retrying on the next change');
    }
  }

  private drop(reason: string): void {
    if (this.held.size > 0) this.logger.error({ reason, pools: this.held.size }, 'shard fenced: its pools are no longer served here');
    this.held.clear();
    this.schedule();
  }

  private async pass(): Promise<void> {
    if (this.mirrorChanged) {
      this.mirrorChanged = false;
      this.readMirror();
    }
    const deployment = this.deployment;
    const self = this.options.shardId;
    const leaseId = this.lease.leaseId;
    const apply = (): Promise<void> => this.options.producer.applyDeployment(deployment, (key) => this.held.has(key));
    // While etcd is lost or the lease unconfirmed nothing is claimed or released.
    if (this.mirror.stale || !this.lease.confirmed || leaseId === undefined) return apply();

    const mine = claimValue(self, leaseId);
    const revision = this.mirror.revision;
    for (const [key, rev] of this.releasing) if (revision >= rev) this.releasing.delete(key);
    // Pool → shard holding its claim, as etcd shows it. A claim under this lease that is not held is
    // adopted (a claim whose answer was lost, or one kept through an etcd outage); a claim of this
    // shard under an older lease is nobody's to take until it is gone with that lease.
    const owners = new Map<string, string>();
    for (const [key, value] of this.mirror.entries) {
      const parsed = this.cache.key(key);
      if (parsed?.kind !== 'owner') continue;
      const pool = parsed.poolKey;
      if (this.releasing.has(pool)) owners.set(pool, '(released)');
      else if (value === mine) {
        if (!this.held.has(pool)) this.held.set(pool, revision);
        owners.set(pool, self);
      } else owners.set(pool, claimShard(value) === self ? value : claimShard(value));
    }
    // A held claim that etcd no longer shows (at or past its revision) was lost.
    for (const [pool, rev] of this.held) {
      if (owners.get(pool) === self) continue;
      if (revision >= rev) {
        this.held.delete(pool);
        this.logger.warn({ pool }, 'the claim of a served pool is gone from etcd; no longer serving it');
      } else owners.set(pool, self);
    }
    const plan = planShard({ self, live: this.live, pools: deployment.pools.map((p) => p.key), owners });

    for (const key of plan.release) this.held.delete(key);
    await apply();
    await Promise.all(
      plan.release.map(async (key) => {
        this.releasing.set(key, await releasePool(this.client, this.prefix, key, mine));
      }),
    );
    if (plan.release.length > 0) this.logger.info({ pools: plan.release }, 'pools handed over');

    const claimed = await Promise.all(plan.claim.map(async (key) => [key, await claimPool(this.client, this.prefix, key, mine, leaseId)] as const));
    // A claim made under a lease that ended meanwhile is not served (it dies with that lease).
    if (this.lease.leaseId !== leaseId) return;
    const taken = claimed.filter(([, rev]) => rev !== undefined) as [string, bigint][];
    for (const [key, rev] of taken) this.held.set(key, rev);
    if (taken.length > 0) {
      this.logger.info({ pools: taken.map(([key]) => key) }, 'pools claimed');
      await apply();
    }
  }
}
