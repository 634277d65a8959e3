// RelayClient: one Relay address, four independent planes (catalog, pool replicas, readiness,
// load + serving load). Each plane is a reopening stream whose messages go through a pure reducer;
// pool replicas follow the catalog: one subscription per pool, keyed by its current producer.
// A connection epoch starts with GetRelayInfo; its RelayIdentity fences every plane, and a message
// from another Relay instance (a restart: new incarnation) ends the epoch (consumer.md §1.3).
import { EventEmitter } from 'events';
import { Metadata, status as GrpcStatus, type ClientReadableStream, type ClientUnaryCall, type ServiceError } from '@grpc/grpc-js';
import {
  CLIENT_SUBSCRIBER_ID_MAX_BYTES,
  DEFAULT_CLIENT_FLOW_CONTROL_WINDOW_BYTES,
  DEFAULT_MAX_REPLICA_AGE_MS,
  DEFAULT_QUEUES,
  DEFAULT_VERIFICATION_WINDOW,
  HTTP2_MAX_WINDOW_BYTES,
  HTTP2_MIN_WINDOW_BYTES,
  LOAD_SILENCE_MIN_MS,
  LOAD_SILENCE_WINDOWS,
  MAX_VERIFICATION_WINDOW,
  RELAY_INFO_TIMEOUT_MS,
} from '../config/defaults';
import { clientChannel, type ClientTlsOptions } from '../security/client-tls';
import { RELAY_CONTRACT_MARKER } from '../wire/constants';
import { relayErrorReason, relayErrorReasonName } from '../wire/errors';
import { makeClient } from '../wire/service';
import type { RelayIdentity, RelayInfo } from '../wire/types';
import { hasControlCharacter } from '../wire/text';
import { Backoff, DEFAULT_BACKOFF, type BackoffOptions } from './backoff';
import { applyCatalogUpdate, type CatalogValue } from './catalog-plane';
import { relayLabel, sameRelay } from './envelope';
import { planeStreamAction } from './error-action';
import { queryHasher } from './hashing';
import { applyPoolLoadUpdate, applyServingLoadUpdate, type PoolLoadValue, type ServingLoadValue } from './load-plane';
import type { Plane } from './plane-error';
import { PoolReplicas, type PoolFilter, type PoolReplicaStatus, type ReplicaEvent } from './pool-replicas';
import { runQuery, type QueryRequest, type QueryResult } from './query';
import { applyReadinessUpdate, type ReadinessValue } from './readiness-plane';
import { checkRelayInfo } from './relay-info';
import type { PoolReplica } from './replica';
import { ReplicaBudget, type ReplicaBudgetLimits } from './replica-budget';
import { RelayChannel } from './relay-channel';
import { ResilientStream } from './resilient-stream';
import { describeInvalid, failureFields, type ClientErrorEvent } from './stream-events';

export interface RelayClientOptions {
  /** Diagnostic label; each stream appends its own suffix ("/catalog", "/ckf", ...). */
  subscriberId: string;
  backoff?: Partial<BackoffOptions>;
  /** Prefix-search verification window, 1..8 (default 2). */
  verificationWindow?: number;
  /** Largest accepted response message (default 8 MiB: a full snapshot chunk exceeds 4 MiB). */
  maxMessageBytes?: number;
  /** Serving load is a variant-S RPC; a Relay without it answers UNIMPLEMENTED and the plane stops. */
  servingLoad?: boolean;
  /** A pool stream silent for longer drops its replica and resubscribes (default 30 s; the Relay heartbeats every 10 s). */
  maxReplicaAgeMs?: number;
  /** Subscribe only to the pools this selects (each replica costs a snapshot download and a stream slot). */
  pools?: PoolFilter;
  /** TLS to the relay (its `tls` config); plaintext when omitted. */
  tls?: ClientTlsOptions;
  /**
   * The most pool replicas (and bytes of their bucket tables) the relay may make this client hold
   * (default 256 pools, 1 GiB). A ReplicaBudget instance is shared with every client given it.
   */
  memoryBudget?: Partial<ReplicaBudgetLimits> | ReplicaBudget;
  /**
   * HTTP/2 receive window of the connection and of each stream, in bytes (default 4 MiB,
   * DEFAULT_CLIENT_FLOW_CONTROL_WINDOW_BYTES): a few deltas of a busy pool, so a consumer a few ms
   * late does not hold the relay's sends back. Also the most the connection holds unread.
   */
  flowControlWindowBytes?: number;
}


export interface RelayClientEvents {
  /** The identity of a new connection epoch (after GetRelayInfo), or null when an epoch ends. */
  relay: [RelayIdentity | null];
  catalog: [CatalogValue | null];
  readiness: [ReadinessValue | null];
  load: [PoolLoadValue | null];
  servingLoad: [ServingLoadValue | null];
  replicaInstalled: [ReplicaEvent & { sequence: bigint }];
  replicaInvalidated: [ReplicaEvent & { reason: string; message: string }];
  delta: [ReplicaEvent & { baseSequence: bigint; sequence: bigint; imageCount: number }];
  error: [ClientErrorEvent];
}

export class RelayClient extends EventEmitter<RelayClientEvents> {
  private readonly channel: RelayChannel;
  private readonly subscriberId: string;
  private readonly backoffOptions: BackoffOptions;
  private readonly verificationWindow: number;
  private readonly maxReplicaAgeMs: number;
  private planes: ResilientStream<unknown>[] = [];
  private readonly pools: PoolReplicas;
  /** The Relay instance of the current connection epoch; undefined while the handshake runs. */
  private identity: RelayIdentity | undefined;
  /** Counts handshakes so a late answer of an abandoned one is ignored. */
  private handshakes = 0;
  private handshakeCall: ClientUnaryCall | undefined;
  private handshakeTimer: NodeJS.Timeout | undefined;
  private readonly handshakeBackoff: Backoff;
  private catalogValue: CatalogValue | undefined;
  private readinessValue: ReadinessValue | undefined;
  private loadValue: PoolLoadValue | undefined;
  private servingLoadValue: ServingLoadValue | undefined;
  private started = false;
  private closed = false;
  private readonly closeChannel: () => void;

  constructor(
    readonly address: string,
    private readonly options: RelayClientOptions,
  ) {
    super();
    this.subscriberId = checkSubscriberId(options.subscriberId);
    this.backoffOptions = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.handshakeBackoff = new Backoff(this.backoffOptions); // validates the bounds now rather than at the first failure
    this.verificationWindow = options.verificationWindow ?? DEFAULT_VERIFICATION_WINDOW;
    if (!Number.isInteger(this.verificationWindow) || this.verificationWindow < 1 || this.verificationWindow > MAX_VERIFICATION_WINDOW) {
      throw new RangeError(`verificationWindow must be an integer in 1..${MAX_VERIFICATION_WINDOW}`);
    }
    if (options.maxReplicaAgeMs !== undefined && !(options.maxReplicaAgeMs > 0)) throw new RangeError('maxReplicaAgeMs must be positive');
    this.maxReplicaAgeMs = options.maxReplicaAgeMs ?? DEFAULT_MAX_REPLICA_AGE_MS;
    const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_QUEUES.maxMessageBytes;
    const windowBytes = options.flowControlWindowBytes ?? DEFAULT_CLIENT_FLOW_CONTROL_WINDOW_BYTES;
    if (!Number.isInteger(windowBytes) || windowBytes < HTTP2_MIN_WINDOW_BYTES || windowBytes > HTTP2_MAX_WINDOW_BYTES) {
      throw new RangeError(`flowControlWindowBytes must be an integer in ${HTTP2_MIN_WINDOW_BYTES}..${HTTP2_MAX_WINDOW_BYTES}`);
    }
    const { credentials, channelOptions, close } = clientChannel(options.tls, (err) =>
      this.report({ plane: 'relay', reason: 'TlsFilesRefused', message: `${err.message}; the certificates in use are kept`, next: 'retry' }),
    );
    this.closeChannel = close;
    // The channel's own reconnect backoff (grpc-js: 1 s growing to 120 s) would otherwise decide when a
    // restarted Relay is dialled again, whatever this client's backoff says (relay-channel.ts).
    this.channel = new RelayChannel(
      (maxReconnectMs) =>
        makeClient(address, {
          credentials,
          channelOptions: {
            ...channelOptions,
            'grpc.max_receive_message_length': maxMessageBytes,
            'grpc-node.flow_control_window': windowBytes,
            'grpc.initial_reconnect_backoff_ms': this.backoffOptions.initialMs,
            'grpc.max_reconnect_backoff_ms': maxReconnectMs,
          },
        }),
      this.backoffOptions,
    );
    const budget = options.memoryBudget instanceof ReplicaBudget ? options.memoryBudget : new ReplicaBudget(options.memoryBudget);
    this.pools = new PoolReplicas(() => this.channel.client, this.subscriberId, this.backoffOptions, this.maxReplicaAgeMs, {
      sameConnection: (relay) => this.sameConnection(relay),
      installed: (e) => this.emit('replicaInstalled', e),
      invalidated: (e) => this.emit('replicaInvalidated', e),
      delta: (e) => this.emit('delta', e),
      error: (e) => this.report(e),
    }, budget, options.pools);
  }

  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.handshake();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.abandonHandshake();
    this.stopPlanes();
    this.pools.close('closed', 'the client was closed');
    this.channel.close();
    this.closeChannel();
  }

  /** The Relay instance of the current connection epoch (undefined until GetRelayInfo answered). */
  relayIdentity(): RelayIdentity | undefined {
    return this.identity;
  }

  catalog(): CatalogValue | undefined {
    return this.catalogValue;
  }

  readiness(): ReadinessValue | undefined {
    return this.readinessValue;
  }

  /** The latest pool-load window, by producer key; join it with the catalog (a pool absent from the catalog has no load). */
  load(): PoolLoadValue | undefined {
    return this.loadValue;
  }

  servingLoad(): ServingLoadValue | undefined {
    return this.servingLoadValue;
  }

  /** Every catalog pool with its subscription state and replica statistics. */
  poolStates(nowMs: number = Date.now()): PoolReplicaStatus[] {
    return this.pools.states(nowMs);
  }

  /** The installed replica of a pool, if any. */
  replica(poolKey: string): PoolReplica | undefined {
    return this.pools.ready().get(poolKey);
  }

  query(request: QueryRequest): QueryResult {
    return runQuery(
      {
        nowMs: Date.now(),
        maxReplicaAgeMs: this.maxReplicaAgeMs,
        catalog: this.catalogValue,
        replicas: this.pools.ready(),
        readiness: this.readinessValue,
        load: this.loadValue,
        servingLoad: this.servingLoadValue,
      },
      request,
      queryHasher,
      this.verificationWindow,
    );
  }

  // --- connection epochs ---

  private handshake(): void {
    const attempt = ++this.handshakes;
    const request = { contractMarker: RELAY_CONTRACT_MARKER };
    this.handshakeCall = this.channel.client.getRelayInfo(request, new Metadata(), { deadline: Date.now() + RELAY_INFO_TIMEOUT_MS }, (err, info) => {
      if (attempt !== this.handshakes || this.closed) return;
      this.handshakeCall = undefined;
      if (err) this.handshakeFailed(err);
      else this.handshakeAnswered(info!);
    });
  }

  private handshakeAnswered(info: RelayInfo): void {
    const verdict = checkRelayInfo(info);
    if (!verdict.ok) {
      this.report({ plane: 'relay', reason: verdict.reason, message: verdict.message, next: verdict.next });
      if (verdict.next === 'retry') this.retryHandshake();
      return;
    }
    this.handshakeBackoff.reset();
    this.identity = verdict.relay;
    this.emit('relay', verdict.relay);
    this.openPlanes();
  }

  private handshakeFailed(err: ServiceError): void {
    const relayReason = relayErrorReason(err);
    const next = planeStreamAction(relayReason, err.code);
    const reason = relayReason !== undefined ? relayErrorReasonName(relayReason) : GrpcStatus[err.code];
    this.report({ plane: 'relay', reason, code: err.code, relayReason, message: err.details, next });
    if (next === 'retry') this.retryHandshake();
  }

  private retryHandshake(): void {
    this.handshakeTimer = setTimeout(() => {
      this.handshakeTimer = undefined;
      this.handshake();
    }, this.handshakeBackoff.next());
  }

  private abandonHandshake(): void {
    this.handshakes++;
    this.handshakeCall?.cancel();
    this.handshakeCall = undefined;
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = undefined;
  }

  /**
   * False when `relay` names another Relay instance than the epoch's: the epoch ends (every replica
   * and plane value is dropped) and a new one starts with a fresh handshake. A missing identity is
   * left to the plane's own validator.
   */
  private sameConnection(relay: RelayIdentity | undefined): boolean {
    const current = this.identity;
    if (!relay || !current || sameRelay(current, relay)) return true;
    this.identity = undefined;
    this.stopPlanes();
    this.pools.clear('relayChanged', `the Relay instance changed (${relayLabel(current)} -> ${relayLabel(relay)})`);
    this.dropCatalog();
    this.dropReadiness();
    this.dropLoad();
    this.dropServingLoad();
    this.emit('relay', null);
    this.report({ plane: 'relay', reason: 'RelayIdentityChanged', message: `relay ${relayLabel(current)} was replaced by ${relayLabel(relay)}`, next: 'retry' });
    this.retryHandshake();
    return false;
  }

  // --- planes ---

  private openPlanes(): void {
    const request = (suffix: string) => ({ subscriberId: `${this.subscriberId}/${suffix}`, contractMarker: RELAY_CONTRACT_MARKER });
    this.planes = [
      this.plane('catalog', () => this.channel.client.watchKvPoolCatalog(request('catalog')), (msg) => {
        const step = applyCatalogUpdate(this.catalogValue, msg);
        if (step.kind === 'heartbeat') return;
        this.catalogValue = step.value;
        this.pools.reconcile(step.value);
        this.emit('catalog', step.value);
      }, () => this.dropCatalog()),
      this.plane('readiness', () => this.channel.client.subscribeServingReadiness(request('readiness')), (msg) => {
        const step = applyReadinessUpdate(this.readinessValue, msg);
        if (step.kind === 'heartbeat') return;
        this.readinessValue = step.value;
        this.emit('readiness', step.value);
      }, () => this.dropReadiness()),
      this.plane('load', () => this.channel.client.subscribeKvPoolLoad(request('load')), (msg) => {
        const step = applyPoolLoadUpdate(this.loadValue, msg);
        if (step.kind === 'stale') return;
        this.loadValue = step.value;
        this.emit('load', step.value);
      }, () => this.dropLoad(), () => loadSilenceLimitMs(this.loadValue?.windowMs)),
    ];
    if (this.options.servingLoad !== false) {
      this.planes.push(
        this.plane('servingLoad', () => this.channel.client.subscribeServingLoad(request('serving-load')), (msg) => {
          const step = applyServingLoadUpdate(this.servingLoadValue, msg);
          if (step.kind === 'stale') return;
          this.servingLoadValue = step.value;
          this.emit('servingLoad', step.value);
        }, () => this.dropServingLoad(), () => loadSilenceLimitMs(this.servingLoadValue?.windowMs)),
      );
    }
    for (const plane of this.planes) plane.start();
  }

  private stopPlanes(): void {
    for (const plane of this.planes) plane.stop();
    this.planes = [];
  }

  private plane<T extends { relay?: RelayIdentity }>(
    plane: Plane,
    open: () => ClientReadableStream<T>,
    onMessage: (msg: T) => void,
    drop: () => void,
    silenceLimitMs?: () => number,
  ): ResilientStream<unknown> {
    const stream = new ResilientStream<T>({
      open,
      onOpen: drop,
      onMessage: (msg) => {
        if (this.sameConnection(msg.relay)) onMessage(msg);
      },
      silenceLimitMs,
      backoff: new Backoff(this.backoffOptions),
      describeInvalid,
      onFailure: (failure) => {
        drop();
        const next = failure.kind === 'status' ? planeStreamAction(failure.relayReason, failure.code!) : 'retry';
        this.report({ plane, ...failureFields(failure), next });
        return next;
      },
    });
    return stream as ResilientStream<unknown>;
  }

  // A plane's value is dropped whenever its stream (re)opens or fails, so data of an old stream is
  // never mixed with a new one.

  private dropCatalog(): void {
    this.pools.clear('catalogUnavailable', 'the catalog plane was lost');
    if (this.catalogValue === undefined) return;
    this.catalogValue = undefined;
    this.emit('catalog', null);
  }

  private dropReadiness(): void {
    if (this.readinessValue === undefined) return;
    this.readinessValue = undefined;
    this.emit('readiness', null);
  }

  private dropLoad(): void {
    if (this.loadValue === undefined) return;
    this.loadValue = undefined;
    this.emit('load', null);
  }

  private dropServingLoad(): void {
    if (this.servingLoadValue === undefined) return;
    this.servingLoadValue = undefined;
    this.emit('servingLoad', null);
  }

  /** 'error' is only emitted when someone listens, so an unobserved failure never throws. */
  private report(event: ClientErrorEvent): void {
    if (this.listenerCount('error') > 0) this.emit('error', event);
  }
}

/** Load windows come every window_ms with no heartbeat in between; a stream silent for several windows is lost. */
function loadSilenceLimitMs(windowMs: bigint | undefined): number {
  return Math.max(LOAD_SILENCE_MIN_MS, LOAD_SILENCE_WINDOWS * Number(windowMs ?? 0n));
}

function checkSubscriberId(id: string): string {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError('subscriberId must be a non-empty string');
  if (Buffer.byteLength(id, 'utf8') > CLIENT_SUBSCRIBER_ID_MAX_BYTES) {
    throw new RangeError(`subscriberId exceeds ${CLIENT_SUBSCRIBER_ID_MAX_BYTES} bytes`);
  }
  if (hasControlCharacter(id)) throw new RangeError('subscriberId must not contain control characters');
  return id;
}
