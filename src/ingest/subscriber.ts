// One worker's KV-event subscription: a SUB socket per data-parallel rank (dialing the engine's PUB
// or bound for engines that dial in), per-rank ordering and replay (stream.ts), native decoding into
// one packed batch per burst (burst.ts), and delivery to the producer's sink.
import { isIP } from 'net';
import {
  INGEST_LOG_MAX_PER_WINDOW,
  INGEST_MAX_MESSAGE_BYTES,
  INGEST_LOG_WINDOW_MS,
  INGEST_MAX_MESSAGE_WORDS,
  INGEST_MAX_ZMQ_SOCKETS,
  INGEST_MESSAGES_PER_TURN,
  INGEST_RETAINED_BUFFER_BYTES,
  INGEST_RECEIVE_HWM,
  INGEST_REDIAL_MS,
  INGEST_RESTART_CONFIRMATIONS,
  INGEST_REPLAY_IDLE_TIMEOUT_MS,
  INGEST_REPLAY_MAX_BUFFERED,
  INGEST_REPLAY_MAX_BUFFERED_BYTES,
  INGEST_REPLAY_RECEIVE_HWM,
} from '../config/defaults';
import { MAX_U64 } from '../config/limits';
import { EngineBatchDecoder } from '../native';
import { ZmqSubscriber, zmqEvents, zmqRecord } from '../native/zmq-subscriber';
import { PackedBurst } from './burst';
import { PrefixViews } from './prefix-views';
import { rankEndpoint } from './endpoints';
import { frameCountError, sequenceLengthError } from './frames';
import { requestReplay } from './replay';
import { RankStream, type ReplayHandle } from './stream';
import { ThrottledLogger } from './throttle';
import { StatsBoard } from './stats-board';
import { allowPeers } from './zap';
import type { IngestLogger, IngestSink, KvEventEndpointConfig, ResetReason, SourceKey, SourceStats } from './types';

export interface SubscriberOptions {
  logger?: IngestLogger;
  replayIdleTimeoutMs?: number;
  maxBufferedDuringReplay?: number;
  /** Bytes of those messages (default INGEST_REPLAY_MAX_BUFFERED_BYTES). */
  maxBufferedBytes?: number;
  /** Largest message a publisher or replay may send (default INGEST_MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /** @internal Each rank's endpoint instead of the config's (a restarted ingest thread rebinds the ports it had). */
  rankEndpoints?: string[];
  /** @internal The memory of the counters' board (StatsBoard), shared with the main thread by an ingest thread. */
  stats?: SharedArrayBuffer;
}

/** The first receive arena (grown to the largest message read, at most maxMessageBytes). */
const INITIAL_ARENA_BYTES = 64 * 1024;

/** Where receive() says whether it holds a message for the next call (after the turn's records). */
const PENDING_AT = INGEST_MESSAGES_PER_TURN * zmqRecord.stride;

/**
 * What receive() fills (payloads, then per message its record and sequence), one for every rank of
 * the thread: a rank handles what it read before its readBurst() returns (messages held back are
 * copied: stream.ts), so no two ranks use it at once. One arena stays in cache and costs 64 KiB
 * per thread; one per rank cost 32 MiB at 512 sources, each touched once every few seconds.
 */
const received = {
  arena: new Uint8Array(INITIAL_ARENA_BYTES),
  /** The records, then one element receive() sets to its `pending` (PENDING_AT). */
  records: new Uint32Array(PENDING_AT + 1),
  sequences: new BigUint64Array(INGEST_MESSAGES_PER_TURN),
  /** Payloads at the arena's start (one message per wake-up: the low rates' case) are views kept here. */
  starts: new PrefixViews<Uint8Array>(),
};

const stderrLogger: IngestLogger = {
  warn: (obj, msg) => process.stderr.write(JSON.stringify({ level: 'warn', ...obj, msg }) + '\n'),
};

export class KvEventSubscriber {
  private readonly ranks: RankSubscription[] = [];
  private listedEndpoints: string[] = [];
  /** Each rank's counters, written where they are counted (and read from there by an ingest thread's main thread). */
  private readonly board: StatsBoard;
  private readonly counters = new Map<number, SourceStats>();
  private readonly log: ThrottledLogger;
  /** One decoder for every rank (calls are synchronous; it keeps scratch buffers). */
  readonly decoder: EngineBatchDecoder;
  private closed = false;
  /** Its sockets are not read (an ingest thread's hand-off has no room for this worker: threads/thread.ts). */
  private paused = false;
  /** Settles at the next resume (replays wait on it). */
  private resuming: { promise: Promise<void>; resolve(): void } | undefined;
  /** The ZAP domain of a bound socket with a peer allow-list. */
  private zap: ReturnType<typeof allowPeers> | undefined;

  constructor(
    readonly config: KvEventEndpointConfig,
    private readonly sink: IngestSink,
    /** @internal */
    readonly options: SubscriberOptions = {},
  ) {
    validateConfig(config);
    this.decoder = new EngineBatchDecoder(config);
    this.board = new StatsBoard(config, options.stats);
    this.log = new ThrottledLogger(options.logger ?? stderrLogger, INGEST_LOG_MAX_PER_WINDOW, INGEST_LOG_WINDOW_MS);
  }

  /** Opens every rank's socket (binds complete before this resolves; connects proceed in the background). */
  async start(): Promise<void> {
    const { config } = this;
    if (config.mode === 'bind' && config.allowedPeers) this.zap = allowPeers(config.allowedPeers);
    for (let rank = config.dpStartRank; rank < config.dpStartRank + config.dpSize; rank++) {
      this.counter({ workerId: config.workerId, dpRank: rank });
      try {
        // Creating the socket can fail too (a descriptor or socket limit), like binding it.
        const sub = new RankSubscription(this, rank);
        this.ranks.push(sub);
        sub.open();
      } catch (err) {
        // E.g. a bind port in use: release every socket opened so far, then report.
        await this.close();
        throw err;
      }
    }
  }

  /** The SUB endpoint of each rank (bound addresses in bind mode, so port 0 shows the chosen port). */
  endpoints(): string[] {
    // The last list while no rank's endpoint moved (a bind sets it): the diagnostics round asks each second.
    const listed = this.listedEndpoints;
    if (listed.length !== this.ranks.length || this.ranks.some((r, i) => r.endpoint !== listed[i])) this.listedEndpoints = this.ranks.map((r) => r.endpoint);
    return this.listedEndpoints;
  }

  stats(): SourceStats[] {
    return this.board.read();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.resuming?.resolve();
    this.resuming = undefined;
    for (const r of this.ranks) r.close();
    this.zap?.release();
    this.zap = undefined;
  }

  /** Stops reading the sockets: their messages queue in ZMQ (whose bound shows as a gap and a replay). */
  pause(): void {
    this.paused = true;
  }

  /** Reads the sockets again, starting with what queued meanwhile. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.resuming?.resolve();
    this.resuming = undefined;
    for (const r of this.ranks) r.resumed();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** @internal While paused, a promise of the resume (a closed subscriber never pauses its replays). */
  whenResumed(): Promise<void> | undefined {
    if (!this.paused || this.closed) return undefined;
    if (!this.resuming) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.resuming = { promise, resolve };
    }
    return this.resuming.promise;
  }

  /** @internal */
  get zapDomain(): string | null {
    return this.zap?.domain ?? null;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** @internal */
  counter(source: SourceKey): SourceStats {
    let s = this.counters.get(source.dpRank);
    if (!s) {
      // Every source is one of the worker's ranks: a batch naming another is rejected before it counts.
      s = this.board.record(source.dpRank);
      if (!s) throw new RangeError(`dp rank ${source.dpRank} is not a rank of worker ${source.workerId}`);
      this.counters.set(source.dpRank, s);
    }
    return s;
  }

  /** @internal */
  warn(obj: object, msg: string): void {
    this.log.warn({ workerId: String(this.config.workerId), ...obj }, msg);
  }

  /** @internal */
  deliver(rank: number, burst: PackedBurst, cut: boolean): void {
    try {
      this.sink.events(burst.view(cut));
    } catch (err) {
      this.warn({ dpRank: rank, err: String(err) }, 'KV-event sink rejected a batch');
    }
  }

  /**
   * `batches` batches of `source` were dropped by its pool's full mailbox, which reset the source:
   * counted as overflows and one reset; the source is replayed from 0 (refill()).
   */
  overflowed(source: SourceKey, batches: number): void {
    const stats = this.counter(source);
    stats.overflows += batches;
    stats.resets += 1;
    this.refill(source);
  }

  /** @internal Batches of `source` were dropped on a full ingest-thread hand-off: counted; replayed from 0. */
  handoffOverflowed(source: SourceKey): void {
    this.counter(source).overflows += 1;
    this.refill(source);
  }

  /**
   * The rank of `source` resets it and asks the engine to replay from 0 (stream.ts overflowed()).
   * Run after the current call, which may be this subscriber's own delivery.
   */
  private refill(source: SourceKey): void {
    queueMicrotask(() => {
      if (this.closed) return;
      const rank = this.ranks.find((r) => r.source.dpRank === source.dpRank);
      if (rank) rank.overflowed();
      else this.reset(source, 'overflow');
    });
  }

  /** @internal */
  reset(source: SourceKey, reason: ResetReason): void {
    this.counter(source).resets += 1;
    try {
      this.sink.reset(source, reason);
    } catch (err) {
      this.warn({ dpRank: source.dpRank, reason, err: String(err) }, 'KV-event sink failed to reset a source');
    }
  }

  /** @internal */
  get replayIdleTimeoutMs(): number {
    return this.options.replayIdleTimeoutMs ?? INGEST_REPLAY_IDLE_TIMEOUT_MS;
  }

  /** @internal */
  get maxMessageBytes(): number {
    return this.options.maxMessageBytes ?? INGEST_MAX_MESSAGE_BYTES;
  }

}

/** One rank: its socket, its ordering state and the sources its batches named since the last reset. */
class RankSubscription {
  readonly source: SourceKey;
  private readonly stats: SourceStats;
  endpoint: string;
  private readonly replayEndpoint: string | undefined;
  private readonly socket: ZmqSubscriber;
  private readonly stream: RankStream;
  /** Other ranks its batches named since the last reset (a batch's own rank names its source). */
  private readonly seen = new Map<number, SourceKey>();
  /** Decoded messages not yet handed to the sink (flushed once the current burst is handled). */
  private readonly burst: PackedBurst;
  private flushQueued = false;
  /**
   * A burst is being read (from its first message to its flush): it flushes then, so no microtask
   * flush is queued for a message it delivers.
   */
  private receiving = false;
  /** A burst was cut at INGEST_MESSAGES_PER_TURN: the next one is read next turn, not on a wake-up before. */
  private continuing = false;
  /** TCP connections up whose handshake has not (yet) succeeded. */
  private unconfirmed = 0;
  private redial: NodeJS.Timeout | undefined;
  /** close() ran (the socket's own `closed` is an addon call: not asked per wake-up). */
  private closed = false;

  constructor(
    private readonly owner: KvEventSubscriber,
    private readonly rank: number,
  ) {
    const { config } = owner;
    this.socket = new ZmqSubscriber(
      {
        receiveHighWaterMark: INGEST_RECEIVE_HWM,
        maxMessageSize: owner.maxMessageBytes,
        maxSockets: INGEST_MAX_ZMQ_SOCKETS,
        // With a domain, every accepted connection is judged by the ZAP handler (zap.ts) before its handshake.
        ...(owner.zapDomain === null ? {} : { zapDomain: owner.zapDomain }),
      },
      () => this.readable(),
      (event, _value, address) => this.event(event, address),
    );
    this.source = { workerId: config.workerId, dpRank: rank };
    this.stats = owner.counter(this.source);
    this.endpoint = owner.options.rankEndpoints?.[rank - config.dpStartRank] ?? rankEndpoint(config.endpoint, rank, config.dpStartRank);
    this.replayEndpoint = config.replayEndpoint && rankEndpoint(config.replayEndpoint, rank, config.dpStartRank);
    this.burst = new PackedBurst(owner.decoder, config.workerId);
    this.stream = new RankStream(
      {
        deliver: (seq, payload) => this.deliver(seq, payload),
        reset: (reason) => this.reset(reason),
        gap: () => {
          owner.counter(this.source).gaps += 1;
        },
        overflow: () => {
          owner.counter(this.source).overflows += 1;
        },
        outOfOrder: (count) => {
          owner.counter(this.source).outOfOrder += count;
          owner.warn({ dpRank: rank, count }, 'KV-event live sequence went backwards without a confirmed restart; dropped');
        },
        startReplay: (from) => this.startReplay(from),
        later: (fn) => setImmediate(fn),
      },
      {
        maxBufferedDuringReplay: owner.options.maxBufferedDuringReplay ?? INGEST_REPLAY_MAX_BUFFERED,
        maxBufferedBytes: owner.options.maxBufferedBytes ?? INGEST_REPLAY_MAX_BUFFERED_BYTES,
        messagesPerTurn: INGEST_MESSAGES_PER_TURN,
        restartConfirmations: INGEST_RESTART_CONFIRMATIONS,
        replayQueueMessages: INGEST_REPLAY_RECEIVE_HWM,
      },
    );
  }

  open(): void {
    const { socket } = this;
    socket.subscribe(this.owner.config.topic);
    if (this.owner.config.mode === 'connect') socket.connect(this.endpoint);
    else this.endpoint = socket.bind(this.endpoint.replace(/:0$/, ':*'));
  }

  close(): void {
    this.closed = true;
    this.stream.close();
    clearTimeout(this.redial);
    this.socket.close();
  }

  /**
   * Monitor events drive first-connect replay and disconnect resets. A connection counts once its
   * ZMTP handshake succeeds: a TCP probe or port scan (accept, handshake error, disconnect) must not
   * reset the worker.
   */
  private event(event: number, address: string): void {
    const stats = this.owner.counter(this.source);
    if (event === zmqEvents.connectRetried || event === zmqEvents.connectDelayed) {
      this.cancelRedial();
    } else if (event === zmqEvents.connected || event === zmqEvents.accepted) {
      this.cancelRedial();
      this.unconfirmed += 1;
    } else if (event === zmqEvents.handshakeSucceeded) {
      this.unconfirmed = Math.max(0, this.unconfirmed - 1);
      stats.connections += 1;
      this.stream.connected();
    } else if (event === zmqEvents.handshakeFailedAuth) {
      stats.refusedPeers += 1;
      this.owner.warn({ dpRank: this.rank, peer: address }, 'KV-event publisher refused: not in allowedPeers');
    } else if (event === zmqEvents.disconnected) {
      this.armRedial();
      if (this.unconfirmed > 0) {
        this.unconfirmed -= 1;
        return;
      }
      stats.connections = Math.max(0, stats.connections - 1);
      this.stream.disconnected();
      // A bound socket may already hold the restarted engine's new connection (the old one's
      // disconnect can be noticed late): that engine's history must be replayed after the reset.
      if (stats.connections > 0) this.stream.connected();
    }
  }

  /**
   * libzmq schedules a reconnect after a lost connection (announced by connect:retry), but ends the
   * session for good after a protocol error, e.g. a message above maxMessageSize: then dial again
   * ourselves, or a dialed engine would stay unread forever.
   */
  private armRedial(): void {
    if (this.owner.config.mode !== 'connect' || this.redial) return;
    this.redial = setTimeout(() => {
      this.redial = undefined;
      if (this.closed) return;
      try {
        this.socket.disconnect(this.endpoint);
      } catch {
        // The ended session is gone already.
      }
      this.socket.connect(this.endpoint);
    }, INGEST_REDIAL_MS);
  }

  private cancelRedial(): void {
    clearTimeout(this.redial);
    this.redial = undefined;
  }

  private readable(): void {
    if (!this.continuing) this.readBurst();
  }

  /** The subscriber resumed: libzmq signals only new messages, so what queued meanwhile is read now. */
  resumed(): void {
    if (this.continuing || this.closed) return;
    this.continuing = true;
    setImmediate(() => this.readBurst());
  }

  /**
   * Everything the socket holds, up to INGEST_MESSAGES_PER_TURN messages, read in one native call and
   * decoded into one burst: one hand-off to the sink per wake-up. A full burst (or one that filled the
   * arena) reads the rest on the next turn: libzmq signals only new messages, so nothing else would.
   */
  private readBurst(): void {
    this.continuing = false;
    if (this.closed || this.owner.isPaused) return;
    const r = received;
    let n = this.socket.receive(r.arena, r.records, r.sequences, INGEST_MESSAGES_PER_TURN);
    while (n < 0) {
      // Doubled, but never past the largest message a peer may send (which -n is at most).
      r.arena = new Uint8Array(Math.max(-n, Math.min(2 * r.arena.length, this.owner.maxMessageBytes)));
      n = this.socket.receive(r.arena, r.records, r.sequences, INGEST_MESSAGES_PER_TURN);
    }
    const pending = r.records[PENDING_AT] === 1;
    this.receiving = true;
    for (let i = 0; i < n; i++) this.handle(i);
    this.receiving = false;
    // An arena a large message grew is given back (it would otherwise stay held at up to 4 MiB).
    if (r.arena.length > INGEST_RETAINED_BUFFER_BYTES) {
      r.arena = new Uint8Array(INITIAL_ARENA_BYTES);
      r.starts.forget();
    }
    const cut = n === INGEST_MESSAGES_PER_TURN;
    this.flush(cut);
    if (cut || pending) {
      this.continuing = true;
      setImmediate(() => this.readBurst());
    }
  }

  /** Message `i` of the last receive(). */
  private handle(i: number): void {
    const at = i * zmqRecord.stride;
    const { records } = received;
    const status = records[at];
    if (status !== zmqRecord.ok) {
      const detail = records[at + 2];
      this.malformed(status === zmqRecord.frameCount ? frameCountError(detail) : sequenceLengthError(detail), 'live');
      return;
    }
    // A connection's first message can be read before its handshake event: it starts the connection
    // all the same, or a busy engine's history would not be replayed.
    if (this.stats.connections === 0) this.stream.connected();
    const offset = records[at + 1];
    const { arena } = received;
    const payload = offset === 0 ? received.starts.of(arena, records[at + 2]) : arena.subarray(offset, offset + records[at + 2]);
    this.stream.live(received.sequences[i], payload);
  }

  /** Decodes one batch into the burst; the sink gets the burst once the messages at hand are handled. */
  private deliver(sequence: bigint, payload: Uint8Array): void {
    let r;
    try {
      r = this.burst.add(sequence, payload, this.rank);
    } catch (err) {
      const e = err as Error & { code?: string; rank?: number };
      if (e.code === 'RankOutOfRange') {
        // A rank the worker does not have would become a source (state, stats, lineage) forever.
        this.owner.counter(this.source).rejectedRanks += 1;
        this.owner.warn({ dpRank: this.rank, sequence: String(sequence), batchRank: e.rank }, 'KV-event batch names a dp rank outside the worker; dropped');
        return;
      }
      this.owner.counter(this.source).lastSequence = sequence;
      this.malformed(e, 'payload', sequence);
      return;
    }
    // The batch's own rank names the source (relay-config.md); engines that leave it unset are this rank.
    let stats = this.stats;
    if (r.dpRank !== this.rank) {
      const source = { workerId: this.source.workerId, dpRank: r.dpRank };
      if (!this.seen.has(source.dpRank)) this.seen.set(source.dpRank, source);
      stats = this.owner.counter(source);
    }
    stats.lastSequence = sequence;
    stats.events += r.events;
    stats.ignored += r.ignored;
    stats.blocks += r.blocks;
    if (r.droppedBlockSize > 0) {
      stats.droppedBlockSize += r.droppedBlockSize;
      stats.mismatchedBlockSize = r.lastDroppedBlockSize;
    }
    // A burst of large messages goes on in pieces of about a message's bound: what the event loop
    // copies of it later (the pool's inbox) stays small (issue 26 item 4).
    if (this.burst.wordCount >= INGEST_MAX_MESSAGE_WORDS) {
      this.flush();
      return;
    }
    if (!this.flushQueued && !this.receiving) {
      // Replies and held-back messages arrive outside the receive loop: flush after their turn.
      this.flushQueued = true;
      queueMicrotask(() => this.flush());
    }
  }

  overflowed(): void {
    this.stream.overflowed();
  }

  private flush(cut = false): void {
    this.flushQueued = false;
    if (this.burst.isEmpty) return;
    if (!this.owner.isClosed) this.owner.deliver(this.rank, this.burst, cut);
    this.burst.clear();
  }

  private reset(reason: ResetReason): void {
    // What was decoded before the reset reaches the sink before it (order per source).
    this.flush();
    this.owner.reset(this.source, reason);
    for (const source of this.seen.values()) this.owner.reset(source, reason);
    this.seen.clear();
    this.owner.warn({ dpRank: this.rank, reason }, 'KV-event source reset; rebuilding from live events');
  }

  private startReplay(from: bigint): ReplayHandle | null {
    if (!this.replayEndpoint || this.owner.isClosed) return null;
    this.owner.counter(this.source).replays += 1;
    const limits = { idleTimeoutMs: this.owner.replayIdleTimeoutMs, maxMessageBytes: this.owner.maxMessageBytes, paused: () => this.owner.whenResumed() };
    return requestReplay(this.replayEndpoint, this.owner.config.topic, from, limits, {
      reply: (handle, seq, payload) => this.stream.replayed(handle, seq, payload),
      end: (handle, complete) => {
        if (!complete) this.owner.warn({ dpRank: this.rank, from: String(from) }, 'KV-event replay incomplete');
        this.stream.replayEnded(handle, complete);
      },
      malformed: (err) => this.malformed(err, 'replay'),
    });
  }

  private malformed(err: Error, where: string, sequence?: bigint): void {
    this.owner.counter(this.source).malformed += 1;
    this.owner.warn(
      { dpRank: this.rank, where, ...(sequence === undefined ? {} : { sequence: String(sequence) }), err: err.message },
      'malformed KV-event message',
    );
  }
}


function validateConfig(c: KvEventEndpointConfig): void {
  if (typeof c.workerId !== 'bigint' || c.workerId < 0n || c.workerId > MAX_U64) throw new TypeError('workerId must be a u64 bigint');
  if (!Number.isInteger(c.dpSize) || c.dpSize < 1) throw new RangeError('dpSize must be a positive integer');
  if (!Number.isInteger(c.dpStartRank) || c.dpStartRank < 0) throw new RangeError('dpStartRank must be a non-negative integer');
  if (typeof c.topic !== 'string') throw new TypeError('topic must be a string');
  if (c.mode !== 'connect' && c.mode !== 'bind') throw new RangeError(`mode must be connect or bind, not ${String(c.mode)}`);
  rankEndpoint(c.endpoint, c.dpStartRank, c.dpStartRank);
  if (c.replayEndpoint !== undefined) rankEndpoint(c.replayEndpoint, c.dpStartRank, c.dpStartRank);
  if (c.allowedPeers !== undefined) {
    if (c.mode !== 'bind') throw new RangeError('allowedPeers applies to bind mode (in connect mode the relay chooses its peer)');
    if (!Array.isArray(c.allowedPeers) || c.allowedPeers.some((a) => typeof a !== 'string' || isIP(a) === 0)) {
      throw new TypeError('allowedPeers must be a list of IP addresses');
    }
  }
  if (c.allowAnyPeer !== undefined && typeof c.allowAnyPeer !== 'boolean') throw new TypeError('allowAnyPeer must be a boolean');
  // Safe by default (issue 26 item 1): a bound socket open to anyone must be asked for.
  if (c.mode === 'bind' && c.allowedPeers === undefined && c.allowAnyPeer !== true) {
    throw new RangeError('bind mode needs allowedPeers, or allowAnyPeer: true to accept any publisher that reaches the port');
  }
}
