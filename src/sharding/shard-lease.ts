// A relay shard's etcd lease and its shard entry (address and identity) under it, kept alive.
//
// The lease is what makes a dead shard's pools move: its claims are keys under this lease, and etcd
// deletes them when it expires. The shard must stop serving before etcd could let another shard
// claim its pools even when it cannot reach etcd to learn that the lease expired, so it counts its
// lease confirmed only until TTL after the send time of the last acknowledged keepalive (less a
// margin for the time it takes to stop serving). The keepalive goes on while etcd is unreachable:
// etcd extends every lease by its TTL when it comes back (a new leader), so after an etcd outage the
// same lease, and every claim under it, is confirmed again. Only an answer that the lease expired
// ends it; then a new lease is granted and the entry written again.
//
// Times are read from the monotonic clock (a wall-clock step must not stretch the fence), and
// `confirmed` compares that clock with the fence deadline on every read, so a fence timer that fires
// late (a busy event loop) never leaves the shard believing an old confirmation. Every fence (the
// deadline passed, the lease expired or was closed) starts a new fence epoch: an etcd answer to a
// claim sent in an earlier epoch is never served, whatever the lease id says.
import { EventEmitter } from 'events';
import { EtcdLeaseInvalidError, type Etcd3, type Lease } from 'etcd3';
import { ETCD_RETRY_INITIAL_MS, ETCD_RETRY_MAX_MS } from '../config/defaults';
import { Backoff } from '../client/backoff';
import { etcdErrorText } from '../discovery/etcd-client';
import { monotonicMs } from '../clock';
import type { Logger } from '../log';

/** Part of the TTL kept in reserve: a shard unconfirmed for (1 - this) x TTL stops serving. */
export const FENCE_MARGIN_FRACTION = 1 / 6;
/** Keepalives per TTL (etcd's own clients send one every TTL/3). */
const KEEPALIVES_PER_TTL = 3;

export interface ShardLeaseEvents {
  /** A new lease was granted and the entry written under it. */
  granted: [leaseId: string];
  /** The lease is confirmed again after `unconfirmed` (same lease, same claims). */
  confirmed: [];
  /** No keepalive was acknowledged for too long: the lease may expire without this shard knowing. */
  unconfirmed: [];
  /** etcd answered that the lease expired: every claim under it is gone. */
  expired: [];
}

export class ShardLease extends EventEmitter<ShardLeaseEvents> {
  private lease: Lease | undefined;
  private id: string | undefined;
  /** Monotonic time until which the lease is certainly alive in etcd (0: not confirmed). */
  private fenceAt = 0;
  /** True once the fence of the current confirmation happened (the deadline passed or the lease ended). */
  private fenced = true;
  private epochValue = 0;
  private fenceTimer: NodeJS.Timeout | undefined;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private readonly backoff = new Backoff({ initialMs: ETCD_RETRY_INITIAL_MS, maxMs: ETCD_RETRY_MAX_MS });
  private closed = false;

  constructor(
    private readonly client: Etcd3,
    private readonly key: string,
    private readonly value: () => string,
    readonly ttlSeconds: number,
    private readonly logger: Logger,
  ) {
    super();
  }

  start(): void {
    void this.acquire();
  }

  /** The current lease id (granted and not known to have expired). */
  get leaseId(): string | undefined {
    return this.id;
  }

  /** True while the lease is certainly alive in etcd (claims under it are this shard's). */
  get confirmed(): boolean {
    return !this.fenced && monotonicMs() < this.fenceAt;
  }

  /** Counts fences: a claim answered in another epoch than it was sent in is not this shard's to serve. */
  get epoch(): number {
    return this.epochValue;
  }

  /** Revokes the lease (its entry and claims are deleted at once, so siblings take over now). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopTimers();
    const lease = this.lease;
    this.lease = undefined;
    this.id = undefined;
    this.fence();
    await lease?.revoke().catch((err: unknown) => this.logger.warn({ err: etcdErrorText(err) }, 'revoking the shard lease failed; it expires on its own'));
  }

  private async acquire(): Promise<void> {
    this.retry = undefined;
    if (this.closed) return;
    const requestedAt = monotonicMs();
    const lease = this.client.lease(this.ttlSeconds, { autoKeepAlive: false });
    lease.on('lost', () => undefined); // failures are handled where the calls are awaited
    this.lease = lease;
    try {
      const id = await lease.grant();
      await lease.put(this.key).value(this.value());
      if (this.lease !== lease || this.closed) return;
      this.backoff.reset();
      this.id = id;
      this.confirm(requestedAt);
      this.logger.info({ key: this.key, lease: id, ttlSeconds: this.ttlSeconds }, 'shard lease granted');
      this.emit('granted', id);
      this.scheduleKeepalive(lease);
    } catch (err) {
      if (this.lease !== lease || this.closed) return;
      lease.release();
      this.lease = undefined;
      const delayMs = this.backoff.next();
      this.logger.error({ err: etcdErrorText(err), retryInMs: delayMs }, 'cannot obtain a shard lease from etcd; retrying');
      this.retry = setTimeout(() => void this.acquire(), delayMs);
    }
  }

  private scheduleKeepalive(lease: Lease): void {
    this.keepaliveTimer = setTimeout(() => void this.keepalive(lease), (this.ttlSeconds * 1000) / KEEPALIVES_PER_TTL);
  }

  private async keepalive(lease: Lease): Promise<void> {
    const sentAt = monotonicMs();
    const intervalMs = (this.ttlSeconds * 1000) / KEEPALIVES_PER_TTL;
    let timer: NodeJS.Timeout | undefined;
    try {
      // A keepalive on a connection that hangs counts as failed after one interval (its late answer is ignored).
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('keepalive timed out')), intervalMs)));
      await Promise.race([lease.keepaliveOnce(), timeout]);
      if (this.lease !== lease || this.closed) return;
      const wasFenced = this.fenced;
      this.confirm(sentAt);
      if (wasFenced && !this.fenced) {
        this.logger.info({ lease: this.id }, 'shard lease confirmed again');
        this.emit('confirmed');
      }
    } catch (err) {
      if (this.lease !== lease || this.closed) return;
      if (err instanceof EtcdLeaseInvalidError) {
        this.expire();
        return;
      }
      // etcd unreachable: keep trying; the fence timer decides when to stop serving.
    } finally {
      clearTimeout(timer);
    }
    this.scheduleKeepalive(lease);
  }

  /** etcd acknowledged the lease at or after `sentAt`: it is alive until TTL after that. */
  private confirm(sentAt: number): void {
    // A deadline that passed before its timer ran (a busy loop) is a fence all the same.
    if (!this.fenced && monotonicMs() >= this.fenceAt) this.unconfirm();
    if (this.fenceTimer) clearTimeout(this.fenceTimer);
    this.fenceAt = sentAt + this.ttlSeconds * 1000 * (1 - FENCE_MARGIN_FRACTION);
    this.fenced = monotonicMs() >= this.fenceAt;
    if (this.fenced) return; // acknowledged too late to count
    this.fenceTimer = setTimeout(() => this.unconfirm(), this.fenceAt - monotonicMs());
  }

  private unconfirm(): void {
    this.fenceTimer = undefined;
    if (this.fenced) return;
    this.fence();
    this.logger.error({ lease: this.id }, 'no keepalive acknowledged within the shard lease TTL');
    this.emit('unconfirmed');
  }

  /** Ends the current confirmation and starts a new epoch. */
  private fence(): void {
    this.fenced = true;
    this.fenceAt = 0;
    this.epochValue += 1;
  }

  private expire(): void {
    this.stopTimers();
    this.lease?.release();
    this.lease = undefined;
    this.id = undefined;
    this.fence();
    this.logger.error({ key: this.key }, 'the shard lease expired; registering the shard again');
    this.emit('expired');
    void this.acquire();
  }

  private stopTimers(): void {
    for (const t of [this.fenceTimer, this.keepaliveTimer, this.retry]) if (t) clearTimeout(t);
    this.fenceTimer = this.keepaliveTimer = this.retry = undefined;
  }
}
