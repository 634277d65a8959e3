// The misconfiguration rules: pure functions of the previous memory, a snapshot and the time. Each
// round remembers, per source and per pool, since when a condition holds (a source without a
// connection, a pool that stays empty while its engines publish) and when something last happened
// (an event, a store dropped for its block size); a rule holds once its condition lasted its
// threshold. Nothing here logs or reads a clock: diagnostics.ts drives it, tests drive it by hand.
//
// A round costs per change, not per source: a source's memory is kept in the order of the snapshot
// it was observed from, so an unchanged source (the sampler hands out its very object again) is known
// by position without a name, and a round where nothing changed returns the last round's memory
// itself (no map, list or string per source: at 512 idle sources these were most of the main
// thread's garbage, BENCHMARKS.md).
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

export interface SourceMemory extends Counts {
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
  /** The sources observed, as the snapshot listed them, and their memory in the same order. */
  readonly list: readonly SourceSnapshot[];
  readonly sources: readonly SourceMemory[];
  readonly pools: ReadonlyMap<string, PoolMemory>;
}

export const EMPTY_MEMORY: Memory = { list: [], sources: [], pools: new Map() };

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

/** A pool not empty while publishing (the same object every round it stays so). */
const NOT_EMPTY: PoolMemory = { publishingEmptySinceMs: undefined, before: ZERO };

/** `now` counts more than `before`: it grew, or it restarted from 0 (a new subscription) and grew again. */
function grew(now: number, before: number): boolean {
  return now > before || (now < before && now > 0);
}

function addCounts(a: Counts, c: Counts): Counts {
  return { events: a.events + c.events, ignored: a.ignored + c.ignored, droppedBlockSize: a.droppedBlockSize + c.droppedBlockSize };
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

/** `latestEventMs`: the latest lastEventMs of the pool's sources (undefined: none ever published). */
function observePool(prev: PoolMemory | undefined, latestEventMs: number | undefined, p: PoolSnapshot, now: number, t: Thresholds, before: () => Counts): PoolMemory {
  if (p.trackedBlocks > 0 || latestEventMs === undefined || now - latestEventMs >= t.poolEmptyMs) return NOT_EMPTY;
  if (prev?.publishingEmptySinceMs !== undefined) return prev;
  if (latestEventMs !== now) return NOT_EMPTY;
  return { publishingEmptySinceMs: now, before: before() };
}

/** Whether `a` and `b` are samples of the same source. */
function sameSource(a: SourceSnapshot, b: SourceSnapshot): boolean {
  return a === b || (a.worker === b.worker && a.dpRank === b.dpRank);
}

/** `memory`'s sources by name (a round whose list no longer lines up with the last one's). */
function byName(memory: Memory): Map<string, SourceMemory> {
  const out = new Map<string, SourceMemory>();
  for (let i = 0; i < memory.list.length; i++) out.set(sourceName(memory.list[i]), memory.sources[i]);
  return out;
}

/** The next memory and every rule that holds at `now`. */
export function evaluate(prev: Memory, snapshot: RelaySnapshot, now: number, t: Thresholds): Evaluation {
  const list = snapshot.sources;
  const findings: Finding[] = [];
  // Each source's memory before this round: at its own position when the list lines up, else by name.
  let named: Map<string, SourceMemory> | undefined;
  const before = (i: number): SourceMemory | undefined =>
    i < prev.list.length && sameSource(prev.list[i], list[i]) ? prev.sources[i] : (named ??= byName(prev)).get(sourceName(list[i]));
  // A new list of memories only from the first source that differs from the last round's.
  let sources: SourceMemory[] | undefined = list.length === prev.sources.length ? undefined : [];
  // The latest event per pool, only while a pool tracks nothing (the empty-pool rule).
  const empty = snapshot.pools.some((p) => p.trackedBlocks === 0);
  let latest: Map<string, number> | undefined;
  for (let i = 0; i < list.length; i++) {
    const s = list[i];
    const was = before(i);
    const after = unchanged(was, s, now, t) ? was : observeSource(was, s, now, t);
    if (sources === undefined && after !== prev.sources[i]) sources = prev.sources.slice(0, i);
    sources?.push(after);
    if (after.disconnectedSinceMs !== undefined || after.mismatchSinceMs !== undefined) sourceFindings(s, after, now, t, findings);
    if (empty && after.lastEventMs !== undefined && after.lastEventMs > ((latest ??= new Map()).get(s.pool) ?? -Infinity)) latest.set(s.pool, after.lastEventMs);
  }
  // A new map of pools only from the first pool whose memory differs from the last round's.
  let pools: Map<string, PoolMemory> | undefined = snapshot.pools.length === prev.pools.size ? undefined : new Map();
  for (let k = 0; k < snapshot.pools.length; k++) {
    const p = snapshot.pools[k];
    const last = prev.pools.get(p.pool);
    const memory = observePool(last, latest?.get(p.pool), p, now, t, () => {
      let sum = ZERO;
      for (let i = 0; i < list.length; i++) if (list[i].pool === p.pool) sum = addCounts(sum, before(i) ?? ZERO);
      return sum;
    });
    if (pools === undefined && memory !== last) {
      pools = new Map();
      for (let j = 0; j < k; j++) pools.set(snapshot.pools[j].pool, prev.pools.get(snapshot.pools[j].pool)!);
    }
    pools?.set(p.pool, memory);
    const f = poolFinding(p, memory, list, now, t);
    if (f) findings.push(f);
  }
  const same = sources === undefined && pools === undefined && list === prev.list;
  return { memory: same ? prev : { list, sources: sources ?? prev.sources, pools: pools ?? prev.pools }, findings };
}

const seconds = (ms: number): number => Math.round(ms / 100) / 10;

function sourceFindings(s: SourceSnapshot, m: SourceMemory, now: number, t: Thresholds, out: Finding[]): void {
  const disconnected = m.disconnectedSinceMs !== undefined && now - m.disconnectedSinceMs >= t.notConnectedMs;
  const mismatching = m.mismatchSinceMs !== undefined && m.lastBlockSizeDropMs !== undefined && now - m.lastBlockSizeDropMs < t.blockSizeHoldMs;
  if (!disconnected && !mismatching) return;
  const name = sourceName(s);
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

/** `list`: every source sampled (the pool's own are picked only when the rule holds). */
function poolFinding(p: PoolSnapshot, m: PoolMemory, list: readonly SourceSnapshot[], now: number, t: Thresholds): Finding | undefined {
  if (m.publishingEmptySinceMs === undefined || now - m.publishingEmptySinceMs < t.poolEmptyMs) return undefined;
  const sources = list.filter((s) => s.pool === p.pool);
  const since = sources.reduce((sum, s) => addCounts(sum, s.stats), ZERO);
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

/** The memory of the `index`th source of the snapshot `memory` was observed from. */
export function sourceMemory(memory: Memory, index: number): SourceMemory | undefined {
  return memory.sources[index];
}

/** Subjects (source names) of a memory, made when first asked (a finding that ended): not every round. */
const subjects = new WeakMap<Memory, Set<string>>();

/** Whether `subject` (a source's `worker/rank` or a pool's key) is in `memory`. */
export function hasSubject(memory: Memory, subject: string): boolean {
  if (memory.pools.has(subject)) return true;
  let names = subjects.get(memory);
  if (!names) subjects.set(memory, (names = new Set(memory.list.map(sourceName))));
  return names.has(subject);
}
