// The consumer's gRPC channel to one relay. Once a connection is lost, grpc-js dials again on its own
// backoff whether or not calls are made, and a call made while it waits out that delay fails at once:
// the channel's pace bounds how soon any stream can reach a restarted relay. Channel options are
// fixed when it is created, so this holds a patient channel (reconnect delay growing to the backoff
// cap) and, for the recovery window after an established connection broke, a quick one (at most the
// recovery cap): a relay back within the window is dialled within that cap, one that stays away no
// more often than the backoff cap says.
import { connectivityState as ConnectivityState } from '@grpc/grpc-js';
import type { KvEventRelayClient } from '../wire/service';
import { recoveryMaxMs, type BackoffOptions } from './backoff';

export class RelayChannel {
  private current: KvEventRelayClient;
  private quick = false;
  private readySince: number | undefined;
  private windowTimer: NodeJS.Timeout | undefined;
  private closed = false;

  /** `make` creates a channel whose reconnect delay grows to the given cap. */
  constructor(
    private readonly make: (maxReconnectMs: number) => KvEventRelayClient,
    private readonly backoff: BackoffOptions,
  ) {
    this.current = this.open(false);
  }

  /** The channel calls start on now (a new one after a switch; calls on the old one have failed). */
  get client(): KvEventRelayClient {
    return this.current;
  }

  /** True while the quick channel is in use (diagnostics and tests). */
  get recovering(): boolean {
    return this.quick;
  }

  close(): void {
    this.closed = true;
    this.clearWindow();
    this.current.close();
  }

  private open(quick: boolean): KvEventRelayClient {
    const client = this.make(quick ? recoveryMaxMs(this.backoff) : this.backoff.maxMs);
    this.quick = quick;
    this.readySince = undefined;
    this.watch(client, ConnectivityState.IDLE);
    return client;
  }

  private watch(client: KvEventRelayClient, state: ConnectivityState): void {
    const channel = client.getChannel();
    channel.watchConnectivityState(state, Infinity, () => {
      if (this.closed || client !== this.current) return;
      const next = channel.getConnectivityState(false);
      this.changed(next);
      if (client === this.current) this.watch(client, next);
    });
  }

  private changed(state: ConnectivityState): void {
    const now = Date.now();
    if (state === ConnectivityState.READY) {
      this.readySince ??= now;
      return;
    }
    const since = this.readySince;
    this.readySince = undefined;
    // The same rule as a stream's: a connection that lasted the backoff cap counts as established,
    // one that keeps breaking right after it was made (a crash loop) keeps the patient pace.
    if (since === undefined || now - since < this.backoff.maxMs) return;
    if (!this.quick) this.replace(true);
    this.clearWindow();
    this.windowTimer = setTimeout(() => {
      this.windowTimer = undefined;
      if (this.current.getChannel().getConnectivityState(false) !== ConnectivityState.READY) this.replace(false);
    }, this.backoff.recoveryWindowMs ?? 0);
    this.windowTimer.unref();
  }

  private replace(quick: boolean): void {
    const old = this.current;
    this.current = this.open(quick);
    old.close();
  }

  private clearWindow(): void {
    if (this.windowTimer) clearTimeout(this.windowTimer);
    this.windowTimer = undefined;
  }
}
