// A relay whose deployment comes from etcd, as one shard of the datacenter's relay (README
// "Discovery from etcd", "Relay shards"). It mirrors the prefix, assembles the endpoints from their
// entries, takes part in the pool split under its lease, and hands the producer the whole
// deployment with the pools this shard serves. Every change goes through one loop, so the producer
// sees one deployment at a time, and always as a diff against the last one.
//
// Order of a hand-over, so that a pool is never served by two shards: the releasing shard stops
// serving (producer applied without the pool) before it deletes its claim; the taking shard serves
// only after its claim was created.
//
// What makes "never two owners for longer than a TTL" hold whatever etcd answers late or not at
// all (`guard`, run synchronously on every lease event, every mirror change and every pass, never
// behind a pass's etcd calls):
// - a fenced shard (lease unconfirmed or expired) stops serving before the event handler returns
//   (`DeploymentSink.withdraw`), unless `loneShardKeepsServing` is set and its mirror shows no
//   other live shard, which is asked again on every change, so a sibling that appears ends it;
// - a served pool whose claim the mirror no longer shows as this lease's (at or past the claim's
//   revision) stops being served, fenced or not;
// - a claim is served only when its answer comes in the same fence epoch it was sent in.
import type { Etcd3 } from 'etcd3';
import type { EtcdDiscoveryConfig } from '../config/schema';
import { clipForLog, type Logger } from '../log';
import type { DiscoveryMetrics } from '../metrics/registry';
import { buildDeployment, type Deployment } from '../producer/deployment';
import { claimPool, claimShard, claimValue, releasePool } from '../sharding/claims';
import { planShard } from '../sharding/plan';
import { ShardLease } from '../sharding/shard-lease';
import { assembleEndpoints, ValueCache, type Rejection } from './assemble';
import { createEtcdClient, etcdErrorText } from './etcd-client';
import { normalizePrefix, ownerKey, shardKey } from './keys';
import { PrefixMirror } from './mirror';
import { PassLoop } from './pass-loop';

export interface DeploymentSink {
  applyDeployment(deployment: Deployment, serves: (poolKey: string) => boolean): Promise<void>;
  /** Stops serving, before it returns, the served pools `serves` no longer selects. */
  withdraw(serves: (poolKey: string) => boolean): void;
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
  /** The fence epoch in which a lone shard last kept serving (loneShardKeepsServing). */
  private keptAloneInEpoch: number | undefined;
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
      this.guard();
      this.schedule();
    });
    this.mirror.on('stale', () => this.schedule());
    this.lease.on('granted', () => this.schedule());
    this.lease.on('confirmed', () => this.schedule());
    this.lease.on('expired', () => this.guard());
    this.lease.on('unconfirmed', () => this.guard());
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
    this.live = this.liveShards();
  }

  /** Shard ids with an entry in the mirror. */
  private liveShards(): Set<string> {
    const live = new Set<string>();
    for (const key of this.mirror.entries.keys()) {
      const parsed = this.cache.key(key);
      if (parsed?.kind === 'shard') live.add(parsed.shardId);
    }
    return live;
  }

  private logRejections(rejected: readonly Rejection[]): void {
    const next = new Map(rejected.map((r) => [r.key, r.problem]));
    for (const [key, problem] of next) {
      if (this.rejected.get(key) !== problem) this.logger.error({ key: clipForLog(this.prefix + key), problem: clipForLog(problem) }, 'discovery entry rejected; the rest of the deployment is kept');
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

  /**
   * Withdraws at once every served pool this shard may no longer serve: all of them once fenced
   * (unless it keeps serving alone), and any whose claim the mirror shows gone or another's.
   */
  private guard(): void {
    if (this.held.size === 0) return;
    const before = this.held.size;
    const leaseId = this.lease.leaseId;
    const mine = leaseId === undefined ? undefined : claimValue(this.options.shardId, leaseId);
    for (const [pool, rev] of this.held) {
      if (this.mirror.revision < rev) continue; // the mirror has not seen the claim yet
      if (this.mirror.entries.get(ownerKey('', pool)) === mine) continue;
      this.held.delete(pool);
      this.logger.warn({ pool }, 'the claim of a served pool is gone from etcd; no longer serving it');
    }
    if (!this.lease.confirmed && this.held.size > 0) {
      // An expired lease (no id) took every claim with it: nothing to keep serving alone.
      if (this.options.etcd.loneShardKeepsServing && leaseId !== undefined && this.alone()) {
        // Once per fence, not on every mirror change while it lasts.
        if (this.keptAloneInEpoch !== this.lease.epoch) {
          this.keptAloneInEpoch = this.lease.epoch;
          this.logger.warn({ pools: this.held.size }, 'the shard lease is unconfirmed; no other shard is live, so the pools stay served (stale)');
        }
      } else {
        this.logger.error({ pools: this.held.size, leaseExpired: leaseId === undefined }, 'shard fenced: its pools are no longer served here');
        this.held.clear();
      }
    }
    if (this.held.size === before) return;
    this.options.producer.withdraw((key) => this.held.has(key));
    this.schedule();
  }

  /** True when the mirror, as it is now, shows no live shard but this one. */
  private alone(): boolean {
    return [...this.liveShards()].every((id) => id === this.options.shardId);
  }

  private async pass(): Promise<void> {
    if (this.mirrorChanged) {
      this.mirrorChanged = false;
      this.readMirror();
    }
    this.guard();
    const deployment = this.deployment;
    const self = this.options.shardId;
    const leaseId = this.lease.leaseId;
    const epoch = this.lease.epoch;
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
    // What is still held after guard() is in the mirror or newer than it.
    for (const pool of this.held.keys()) owners.set(pool, self);
    const plan = planShard({ self, live: this.live, pools: deployment.pools.map((p) => p.key), owners });

    for (const key of plan.release) this.held.delete(key);
    await apply();
    await Promise.all(
      plan.release.map(async (key) => {
        this.releasing.set(key, await releasePool(this.client, this.prefix, key, mine));
      }),
    );
    if (plan.release.length > 0) this.logger.info({ pools: plan.release }, 'pools handed over');

    if (this.lease.epoch !== epoch || plan.claim.length === 0) return;
    const claimed = await Promise.all(plan.claim.map(async (key) => [key, await claimPool(this.client, this.prefix, key, mine, leaseId)] as const));
    const taken = claimed.filter(([, rev]) => rev !== undefined) as [string, bigint][];
    // A claim answered after a fence is not served: another shard may own the pool by now. (Under a
    // lease still alive it is adopted from the mirror once the lease is confirmed again.)
    if (this.lease.epoch !== epoch) {
      if (taken.length > 0) this.logger.warn({ pools: taken.map(([key]) => key) }, 'claims answered after the shard was fenced; not serving them');
      return;
    }
    for (const [key, rev] of taken) this.held.set(key, rev);
    if (taken.length > 0) {
      this.logger.info({ pools: taken.map(([key]) => key) }, 'pools claimed');
      await apply();
    }
  }
}
