// The main thread's side of a subscription that runs on an ingest thread: to the producer it is a
// KvEventSubscription like an in-process KvEventSubscriber. Batches and resets reach the sink in the
// order the thread produced them (or, hosted, never leave the thread); counters are what the thread
// counts now (its StatsBoard) plus what earlier incarnations of the thread had counted (a counter
// never goes backwards over a thread restart).
import type { TransferListItem } from 'worker_threads';
import { sourcesOf } from '../sources';
import type { IngestLogger, IngestSink, KvEventEndpointConfig, KvEventSubscription, SourceKey, SourceStats } from '../types';
import { FlowCounter, unpackBurst, type HandedOffBurst } from './handoff';
import type { FromThread, HostedSink, ThreadSubscriberOptions, ToThread } from './protocol';
import { COUNTERS, StatsBoard } from '../stats-board';

/** What a subscription needs of its thread (threads.ts). */
export interface SubscriptionHost {
  attach(subscription: ThreadSubscription): void;
  release(subscription: ThreadSubscription): Promise<void>;
  /** Forgets a subscription whose first open failed (the thread holds nothing of it). */
  detach(subscription: ThreadSubscription): void;
  /** Asks the thread to open the subscription again after `delayMs`. */
  reopenLater(subscription: ThreadSubscription, delayMs: number): void;
  /** Posts to the thread (dropped while it is down: a restart resets and replays every source anyway). */
  send(m: ToThread, transfer?: readonly TransferListItem[]): void;
  readonly logger: IngestLogger & { error(obj: object, msg: string): void };
  readonly restartDelayMs: number;
}

let nextId = 1;

/** No board (the thread is down): no counters but the carried ones. */
const NONE: SourceStats[] = [];

export class ThreadSubscription implements KvEventSubscription {
  readonly id = nextId++;
  private bound: string[] = [];
  /** The counters of the thread's current open (undefined while the thread is down). */
  private board: StatsBoard | undefined;
  /** Counters of the thread incarnations that died, per source key. */
  private readonly carried = new Map<string, SourceStats>();
  /** The last merge of `carried` with the board's list: handed out again while neither changed. */
  private merged: { latest: SourceStats[]; carried: number; out: SourceStats[] } | undefined;
  /** Counts changes of `carried` (a thread death). */
  private carriedChanges = 0;
  private opening: { resolve(): void; reject(err: Error): void } | undefined;
  private closed = false;
  /** What the thread handed off and the sink has not applied yet (a fresh count per open). */
  counter = new FlowCounter();
  /** Hosted, and its thread died with the sink: not reopened (its owner replaces it). */
  orphaned = false;

  constructor(
    private readonly host: SubscriptionHost,
    readonly config: KvEventEndpointConfig,
    private readonly sink: IngestSink,
    private readonly options: ThreadSubscriberOptions,
    /** The thread host's sink its bursts go to (undefined: `sink`, on the main thread). */
    readonly hostedSink?: HostedSink,
  ) {}

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.opening = { resolve, reject };
      this.host.attach(this);
    });
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    // A start still waiting (its thread died before answering) ends with the subscription.
    this.opening?.resolve();
    this.opening = undefined;
    return this.host.release(this);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  endpoints(): string[] {
    // Replaced, never changed in place, by each open's answer: callers may keep and compare it.
    return this.bound;
  }

  stats(): SourceStats[] {
    const latest = this.board?.read() ?? NONE;
    if (this.carried.size === 0) return latest;
    // The board hands out the same list while nothing changed: so does the merge (read every second).
    if (this.merged?.latest === latest && this.merged.carried === this.carriedChanges) return this.merged.out;
    const out = this.merge(latest);
    this.merged = { latest, carried: this.carriedChanges, out };
    return out;
  }

  private merge(latest: readonly SourceStats[]): SourceStats[] {
    const merged = new Map<string, SourceStats>();
    for (const s of this.carried.values()) merged.set(key(s.source), { ...s, source: { ...s.source }, connections: 0 });
    for (const s of latest) {
      const before = merged.get(key(s.source));
      if (!before) {
        merged.set(key(s.source), s);
        continue;
      }
      for (const c of COUNTERS) before[c] += s[c];
      before.connections = s.connections;
      before.lastSequence = s.lastSequence;
    }
    return [...merged.values()].sort((a, b) => a.source.dpRank - b.source.dpRank);
  }

  overflowed(source: SourceKey, batches: number): void {
    if (!this.closed) this.host.send({ type: 'overflowed', id: this.id, source, batches });
  }

  /** The thread's open request; a reopened bound socket keeps the ports it had (engines dial them). */
  openMessage(): ToThread {
    const rankEndpoints = this.config.mode === 'bind' && this.bound.length > 0 ? this.bound : undefined;
    // Bursts of an earlier open (a dead thread's) are never taken: a fresh count, and fresh counters.
    this.counter = new FlowCounter();
    this.board = new StatsBoard(this.config);
    return {
      type: 'open',
      id: this.id,
      config: this.config,
      options: { ...this.options, ...(rankEndpoints ? { rankEndpoints } : {}) },
      flow: this.counter.shared,
      stats: this.board.shared,
      ...(this.hostedSink === undefined ? {} : { hosted: this.hostedSink }),
    };
  }

  /** A message of the thread about this subscription (bursts go to take()). */
  received(m: Exclude<FromThread, { type: 'warn' | 'fatal' | 'events' | 'host' }>): void {
    switch (m.type) {
      case 'reset':
        return this.reset(m.source, m.reason);
      case 'opened':
        this.bound = m.endpoints;
        this.opening?.resolve();
        this.opening = undefined;
        return;
      case 'failed':
        return this.failed(m.message);
      case 'closed':
        return;
    }
  }

  /**
   * The thread died: what it counted is kept, and every source is reset, since batches it had
   * received may never have reached the sink. The restarted thread opens the subscription again,
   * which resubscribes and replays. A hosted one is not reopened: its sink died with the thread, or
   * lost what the thread had in flight to it (its owner replaces both).
   */
  threadDied(): void {
    this.carriedChanges += 1;
    for (const s of this.board?.read() ?? []) {
      const before = this.carried.get(key(s.source));
      if (!before) {
        this.carried.set(key(s.source), { ...s, connections: 0 });
        continue;
      }
      for (const c of COUNTERS) before[c] += s[c];
      before.lastSequence = s.lastSequence;
    }
    this.board = undefined;
    if (this.hostedSink !== undefined) this.orphaned = true;
    if (this.closed || this.orphaned) return;
    for (const source of sourcesOf(this.config)) {
      const carried = this.carried.get(key(source)) ?? this.carried.set(key(source), emptyStats(source)).get(key(source))!;
      carried.resets += 1;
      this.reset(source, 'thread');
    }
  }

  /** A burst (in a hand-off's buffer) for the sink; the promise the sink may return (its batches applied), if any. */
  take(buffer: ArrayBuffer | SharedArrayBuffer, burst: HandedOffBurst): void | Promise<void> {
    if (this.closed) return;
    try {
      return this.sink.events(unpackBurst(buffer, burst));
    } catch (err) {
      this.host.logger.warn({ workerId: String(this.config.workerId), err: String(err) }, 'KV-event sink rejected a batch');
    }
  }

  private reset(source: SourceKey, reason: Parameters<IngestSink['reset']>[1]): void {
    if (this.closed) return;
    try {
      this.sink.reset(source, reason);
    } catch (err) {
      this.host.logger.warn({ workerId: String(source.workerId), dpRank: source.dpRank, reason, err: String(err) }, 'KV-event sink failed to reset a source');
    }
  }

  private failed(message: string): void {
    if (this.opening) {
      // The first start: the caller hears it (as from an in-process subscriber's start()).
      this.host.detach(this);
      this.opening.reject(new Error(message));
      this.opening = undefined;
      return;
    }
    // Reopened after a thread restart (e.g. a bound port not yet released): try again, loudly.
    this.host.logger.error({ workerId: String(this.config.workerId), err: message }, 'KV-event subscription failed to reopen on its restarted ingest thread; retrying');
    this.host.reopenLater(this, this.host.restartDelayMs);
  }
}

function key(source: SourceKey): string {
  return `${source.workerId}:${source.dpRank}`;
}

function emptyStats(source: SourceKey): SourceStats {
  const s = { source, connections: 0, lastSequence: null, mismatchedBlockSize: 0 } as SourceStats;
  for (const c of COUNTERS) s[c] = 0;
  return s;
}
