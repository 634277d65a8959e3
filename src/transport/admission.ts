// Which TCP connections the gRPC listener keeps before anyone on them has authenticated.
//
// A connection costs a slot of `limits.maxConnections` from accept on, but says who it is only when
// its first call arrives (after the TLS handshake and the HTTP/2 preface). So that raw sockets
// cannot take every slot and lock real clients out (health checks included):
// - one source (an IPv4 address, an IPv6 /64: peer-group.ts) holds at most `maxConnectionsPerIp`
//   (by default 1/8 of the slots);
// - a connection that has not started an authorized call (one the subject allow-list let through)
//   within `connectionFirstCallMs` of accept is closed: that deadline covers the TLS handshake;
// - a share of the slots (RESERVED_CONNECTION_SHARE) is kept for sources that have made an
//   authorized call before (remembered, most recent first, up to KNOWN_PEER_SOURCES): a source
//   never seen to make one may open a connection only while fewer than the other slots are taken
//   by connections that have not made a call yet.
// A refused connection is closed at accept, before anything is read from it.
import type * as net from 'net';
import * as grpc from '@grpc/grpc-js';
import {
  INGEST_LOG_MAX_PER_WINDOW,
  INGEST_LOG_WINDOW_MS,
  KNOWN_PEER_SOURCES,
  PER_IP_CONNECTION_SHARE,
  RESERVED_CONNECTION_SHARE,
  type Limits,
} from '../config/defaults';
import { ThrottledLogger } from '../ingest/throttle';
import type { Logger } from '../log';
import { peerGroup } from './peer-group';

export interface AdmissionPolicy {
  maxConnections: number;
  maxConnectionsPerIp: number;
  firstCallMs: number;
}

export type RefusalReason = 'total' | 'per_ip' | 'reserved';

export interface ConnectionStats {
  /** Open connections that have not started an authorized call yet. */
  pending: number;
  /** Open connections that have. */
  established: number;
  refusedTotal: Record<RefusalReason, number>;
  /** Connections closed because no authorized call started within connectionFirstCallMs. */
  firstCallTimeoutsTotal: number;
}

interface Tracked {
  group: string;
  established: boolean;
  timer: NodeJS.Timeout;
}

/** The slots only sources known to have made an authorized call may take. */
export function reservedConnections(maxConnections: number): number {
  return Math.floor(maxConnections * RESERVED_CONNECTION_SHARE);
}

/** `limits.maxConnectionsPerIp`, or its default share of maxConnections. */
export function connectionsPerIp(limits: Pick<Limits, 'maxConnections' | 'maxConnectionsPerIp'>): number {
  return limits.maxConnectionsPerIp ?? Math.max(1, Math.floor(limits.maxConnections * PER_IP_CONNECTION_SHARE));
}

export class ConnectionAdmission {
  /** Open connections by "address:port", as grpc-js's call.getPeer() spells them. */
  private readonly open = new Map<string, Tracked>();
  private readonly perGroup = new Map<string, number>();
  /** Sources that made an authorized call, least recent first. */
  private readonly known = new Map<string, true>();
  private pending = 0;
  private readonly refusedTotal: Record<RefusalReason, number> = { total: 0, per_ip: 0, reserved: 0 };
  private firstCallTimeouts = 0;
  private readonly unreserved: number;
  private readonly log: ThrottledLogger;

  constructor(private readonly policy: AdmissionPolicy, logger: Logger) {
    this.unreserved = policy.maxConnections - reservedConnections(policy.maxConnections);
    // Anyone can connect, as often as they like: the same log budget as bad engine input.
    this.log = new ThrottledLogger(logger, INGEST_LOG_MAX_PER_WINDOW, INGEST_LOG_WINDOW_MS);
  }

  /** Takes an accepted socket in, or refuses it (the caller closes it); tracks it until it closes. */
  admit(socket: net.Socket): boolean {
    const address = socket.remoteAddress;
    if (address === undefined) return false; // already gone
    const group = peerGroup(address);
    const refusal = this.refusal(group);
    if (refusal) {
      this.refusedTotal[refusal] += 1;
      this.log.warn({ peer: group, reason: refusal, open: this.open.size, pending: this.pending }, 'gRPC connection refused');
      return false;
    }
    const key = `${address}:${socket.remotePort}`;
    const tracked: Tracked = {
      group,
      established: false,
      timer: setTimeout(() => {
        if (tracked.established) return;
        this.firstCallTimeouts += 1;
        this.log.warn({ peer: key, afterMs: this.policy.firstCallMs }, 'gRPC connection closed: no call within the first-call deadline');
        socket.destroy();
      }, this.policy.firstCallMs).unref(),
    };
    this.open.set(key, tracked);
    this.perGroup.set(group, (this.perGroup.get(group) ?? 0) + 1);
    this.pending += 1;
    socket.once('close', () => {
      clearTimeout(tracked.timer);
      this.open.delete(key);
      const left = this.perGroup.get(group)! - 1;
      if (left === 0) this.perGroup.delete(group);
      else this.perGroup.set(group, left);
      if (!tracked.established) this.pending -= 1;
    });
    return true;
  }

  /** Place it after the subject allow-list: a call it refuses never reaches this one. */
  readonly interceptor: grpc.ServerInterceptor = (_method, call) =>
    new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, proceed) => {
            this.authorized(call.getPeer());
            proceed(metadata);
          },
        }),
    });

  stats(): ConnectionStats {
    return {
      pending: this.pending,
      established: this.open.size - this.pending,
      refusedTotal: { ...this.refusedTotal },
      firstCallTimeoutsTotal: this.firstCallTimeouts,
    };
  }

  private refusal(group: string): RefusalReason | undefined {
    if (this.open.size >= this.policy.maxConnections) return 'total';
    if ((this.perGroup.get(group) ?? 0) >= this.policy.maxConnectionsPerIp) return 'per_ip';
    if (!this.known.has(group) && this.pending >= this.unreserved) return 'reserved';
    return undefined;
  }

  private authorized(peer: string): void {
    const tracked = this.open.get(peer);
    if (!tracked) return;
    if (!tracked.established) {
      tracked.established = true;
      clearTimeout(tracked.timer);
      this.pending -= 1;
    }
    this.known.delete(tracked.group);
    this.known.set(tracked.group, true);
    if (this.known.size > KNOWN_PEER_SOURCES) this.known.delete(this.known.keys().next().value!);
  }
}
