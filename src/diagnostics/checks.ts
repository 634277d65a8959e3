// The misconfiguration rules: pure functions of the previous memory, a snapshot and the time. Each
// round remembers, per source and per pool, since when a condition holds (a source without a
// connection, a pool that stays empty while its engines publish) and when something last happened
// (an event, a store dropped for its block size); a rule holds once its condition lasted its
// threshold. Nothing here logs or reads a clock: diagnostics.ts drives it, tests drive it by hand.
import { sourceName, type PoolSnapshot, type RelaySnapshot, type SourceSnapshot } from './snapshot';

export const CHECKS = ['source_not_connected', 'block_size_mismatch', 'pool_empty_while_publishing'] as const;
export type CheckName = (typeof CHECKS)[number];

export interface Thresholds {
  /** A source without a connection this long after its start or a loss. */
  notConnectedMs: number;
  /** A pool still empty this long after its engines began to publish (and they still do). */
  poolEmptyMs: number;
  /** A block-size mismatch holds this long after the last store it dropped. */
  blockSizeHoldMs: number;
}

/** A source's counters as the rules read them (a replaced subscription starts again from 0). */
interface Counts {
  events: number;
  ignored: number;
  droppedBlockSize: number;
}

interface SourceMemory extends Counts {
  /** The sample this memory was observed from: the same object again means nothing changed since. */
  sampled: SourceSnapshot;
  firstSeenMs: number;
  /** Since when it has no connection (its first sample counts as one without). */
  disconnectedSinceMs: number | undefined;
  everConnected: boolean;
  lastSequence: bigint | null;
  /** When a sample last showed a new message from the engine. */
  lastEventMs: number | undefined;
  /** When a sample last showed a store dropped for its block size, and since when that goes on. */
  lastBlockSizeDropMs: number | undefined;
  mismatchSinceMs: number | undefined;
}

interface PoolMemory {
  /** Since when its engines publish while it tracks no block. */
  publishingEmptySinceMs: number | undefined;
  /** Its sources' counters just before then: what arrived since tells why nothing landed. */
  before: Counts;
}

export interface Memory {
  readonly sources: ReadonlyMap<string, SourceMemory>;
  readonly pools: ReadonlyMap<string, PoolMemory>;
}

export const EMPTY_MEMORY: Memory = { sources: new Map(), pools: new Map() };

export type FindingFields = Record<string, string | number | string[]>;

export interface Finding {
  check: CheckName;
  /** `worker/rank` of a source, the key of a pool. */
  subject: string;
  sinceMs: number;
  /** What a log line and the status view say about it (JSON-safe), `action` among them. */
  fields: FindingFields;
}

export interface Evaluation {
  memory: Memory;
  findings: Finding[];
}

const ZERO: Counts = { events: 0, ignored: 0, droppedBlockSize: 0 };

/** `now` counts more than `before`: it grew, or it restarted from 0 (a new subscription) and grew again. */
function grew(now: number, before: number): boolean {
  return now > before || (now < before && now > 0);
}

function countsOf(s: SourceSnapshot): Counts {
  return { events: s.stats.events, ignored: s.stats.ignored, droppedBlockSize: s.stats.droppedBlockSize };
}

function sumCounts(list: Counts[]): Counts {
  return list.reduce((a, c) => ({ events: a.events + c.events, ignored: a.ignored + c.ignored, droppedBlockSize: a.droppedBlockSize + c.droppedBlockSize }), ZERO);
}

function observeSource(prev: SourceMemory | undefined, s: SourceSnapshot, now: number, t: Thresholds): SourceMemory {
  const st = s.stats;
  const connected = st.connections > 0;
  if (!prev) {
    const first: SourceMemory = {
      sampled: s,
      events: 0,
      ignored: 0,
      droppedBlockSize: 0,
      firstSeenMs: now,
      disconnectedSinceMs: now,
      everConnected: false,
      lastSequence: null,
      lastEventMs: undefined,
      lastBlockSizeDropMs: undefined,
      mismatchSinceMs: undefined,
    };
    return observeSource(first, s, now, t);
  }
  const published = grew(st.events, prev.events) || grew(st.ignored, prev.ignored) || (st.lastSequence !== null && st.lastSequence !== prev.lastSequence);
  const dropped = grew(st.droppedBlockSize, prev.droppedBlockSize);
  const mismatching = prev.lastBlockSizeDropMs !== undefined && now - prev.lastBlockSizeDropMs < t.blockSizeHoldMs;
  return {
    sampled: s,
    events: st.events,
    ignored: st.ignored,
    droppedBlockSize: st.droppedBlockSize,
    firstSeenMs: prev.firstSeenMs,
    disconnectedSinceMs: connected ? undefined : (prev.disconnectedSinceMs ?? now),
    everConnected: prev.everConnected || connected,
    lastSequence: st.lastSequence,
    lastEventMs: published ? now : prev.lastEventMs,
    lastBlockSizeDropMs: dropped ? now : prev.lastBlockSizeDropMs,
    mismatchSinceMs: dropped && !mismatching ? now : mismatching || dropped ? prev.mismatchSinceMs : undefined,
  };
}

/**
 * `prev` as is when `s` is the very sample it was observed from (the sampler keeps an unchanged
 * source's object) and no hold ran out since: observing it again would give the same values.
 */
function unchanged(prev: SourceMemory | undefined, s: SourceSnapshot, now: number, t: Thresholds): prev is SourceMemory {
  return prev?.sampled === s && (prev.mismatchSinceMs === undefined || now - prev.lastBlockSizeDropMs! < t.blockSizeHoldMs);
}

function observePool(prev: PoolMemory | undefined, sources: { before: SourceMemory | undefined; now: SourceMemory }[], p: PoolSnapshot, now: number, t: Thresholds): PoolMemory {
  if (p.trackedBlocks > 0 || !sources.some((s) => s.now.lastEventMs !== undefined && now - s.now.lastEventMs < t.poolEmptyMs)) {
    return { publishingEmptySinceMs: undefined, before: ZERO };
  }
  if (prev?.publishingEmptySinceMs !== undefined) return prev;
  if (!sources.some((s) => s.now.lastEventMs === now)) return { publishingEmptySinceMs: undefined, before: ZERO };
  return { publishingEmptySinceMs: now, before: sumCounts(sources.map((s) => s.before ?? ZERO)) };
}

/** The next memory and every rule that holds at `now`. */
export function evaluate(prev: Memory, snapshot: RelaySnapshot, now: number, t: Thresholds): Evaluation {
  const sources = new Map<string, SourceMemory>();
  // Per pool, its sources with their memory before and after this round.
  const byPool = new Map<string, { snapshot: SourceSnapshot; before: SourceMemory | undefined; now: SourceMemory }[]>();
  const findings: Finding[] = [];
  for (const s of snapshot.sources) {
    const name = sourceName(s);
    const before = prev.sources.get(name);
    const after = unchanged(before, s, now, t) ? before : observeSource(before, s, now, t);
    sources.set(name, after);
    const entry = { snapshot: s, before, now: after };
    const list = byPool.get(s.pool);
    if (list) list.push(entry);
    else byPool.set(s.pool, [entry]);
    sourceFindings(s, name, after, now, t, findings);
  }
  const pools = new Map<string, PoolMemory>();
  for (const p of snapshot.pools) {
    const own = byPool.get(p.pool) ?? [];
    const memory = observePool(prev.pools.get(p.pool), own, p, now, t);
    pools.set(p.pool, memory);
    const f = poolFinding(p, memory, own.map((o) => o.snapshot), now, t);
    if (f) findings.push(f);
  }
  return { memory: { sources, pools }, findings };
}

const seconds = (ms: number): number => Math.round(ms / 100) / 10;

function sourceFindings(s: SourceSnapshot, name: string, m: SourceMemory, now: number, t: Thresholds, out: Finding[]): void {
  const disconnected = m.disconnectedSinceMs !== undefined && now - m.disconnectedSinceMs >= t.notConnectedMs;
  const mismatching = m.mismatchSinceMs !== undefined && m.lastBlockSizeDropMs !== undefined && now - m.lastBlockSizeDropMs < t.blockSizeHoldMs;
  if (!disconnected && !mismatching) return;
  const where = { worker: s.worker, dpRank: s.dpRank, endpoint: s.endpoint, pool: s.pool };
  if (disconnected) {
    out.push({
      check: 'source_not_connected',
      subject: name,
      sinceMs: m.disconnectedSinceMs!,
      fields: {
        ...where,
        mode: s.mode,
        since: m.everConnected ? 'connection lost' : 'start',
        forSeconds: seconds(now - m.disconnectedSinceMs!),
        action:
          s.mode === 'connect'
            ? "no engine publisher answers there: check that the engine runs with KV events on (vLLM --kv-events-config) publishing on this endpoint, and that this host reaches it"
            : 'no engine has dialled this bound endpoint: point the engine\'s KV-event publisher at it (and check kvEvents.allowedPeers)',
      },
    });
  }
  if (mismatching) {
    out.push({
      check: 'block_size_mismatch',
      subject: name,
      sinceMs: m.mismatchSinceMs!,
      fields: {
        ...where,
        configuredBlockSize: s.kvBlockSize,
        receivedBlockSize: s.stats.mismatchedBlockSize,
        droppedStores: s.stats.droppedBlockSize,
        action: `set model.kvBlockSize of this endpoint to the engine's block size (${s.stats.mismatchedBlockSize}; vLLM --block-size), or run the engine with ${s.kvBlockSize}`,
      },
    });
  }
}

function poolFinding(p: PoolSnapshot, m: PoolMemory, sources: SourceSnapshot[], now: number, t: Thresholds): Finding | undefined {
  if (m.publishingEmptySinceMs === undefined || now - m.publishingEmptySinceMs < t.poolEmptyMs) return undefined;
  const since = sumCounts(sources.map(countsOf));
  const events = since.events - m.before.events;
  const ignored = since.ignored - m.before.ignored;
  const droppedBlockSize = since.droppedBlockSize - m.before.droppedBlockSize;
  const cause =
    droppedBlockSize > 0
      ? "its engines' stores have a block size other than the pool's kvBlockSize (see the block-size warning)"
      : events <= 0 && ignored > 0
        ? 'every event was ignored: another storage tier (medium) or attention group, or an unknown event type'
        : 'events arrived but none left a block stored (stores without a complete block, removals, or stores rejected: see the kv_dc_relay_pool_* counters)';
  return {
    check: 'pool_empty_while_publishing',
    subject: p.pool,
    sinceMs: m.publishingEmptySinceMs,
    fields: {
      pool: p.pool,
      endpoint: p.endpoint,
      model: p.model,
      workers: [...new Set(sources.map((s) => s.worker))],
      forSeconds: seconds(now - m.publishingEmptySinceMs),
      eventsReceived: Math.max(0, events),
      eventsIgnored: Math.max(0, ignored),
      storesDroppedForBlockSize: Math.max(0, droppedBlockSize),
      action: cause,
    },
  };
}

/** Per source, when the last engine message was seen (ms on the rules' clock), if ever. */
export function lastEventMs(memory: Memory, source: string): number | undefined {
  return memory.sources.get(source)?.lastEventMs;
}

/** Per source, when it was first sampled. */
export function firstSeenMs(memory: Memory, source: string): number | undefined {
  return memory.sources.get(source)?.firstSeenMs;
}

/** Since when a source has had no connection, if it has none. */
export function disconnectedSinceMs(memory: Memory, source: string): number | undefined {
  return memory.sources.get(source)?.disconnectedSinceMs;
}
