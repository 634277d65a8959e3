// A subscription's per-source counters (SourceStats) as fixed 8-byte slots of memory shared with the
// main thread: the ingest thread's subscriber writes them where it counts, the main thread reads
// them when it is asked (a scrape). No message per change: posting them (every 250 ms per
// subscription, and 20 ms after each change) woke the main thread thousands of times a second at
// 512 sources, for counters read once per scrape (issue 30 item 2). A reader gets the very object
// it got last time for a record whose slots did not change: the diagnostics round reads every source
// each second, and copying 512 idle records into new objects was ~30 % of an idle main thread.
import { defineSlotProperties } from './slots';
import type { IngestCounters, SourceStats } from './types';

/** Every counter of IngestCounters, in record order. */
export const COUNTERS = Object.keys({
  events: true,
  blocks: true,
  malformed: true,
  rejectedRanks: true,
  overflows: true,
  outOfOrder: true,
  refusedPeers: true,
  gaps: true,
  replays: true,
  resets: true,
  ignored: true,
  droppedBlockSize: true,
} satisfies Record<keyof IngestCounters, true>) as (keyof IngestCounters)[];

// Slots of a rank's record: lastSequence (u64), whether the subscriber counts the rank yet, connections,
// whether lastSequence is set, the mismatched block size, then the counters.
const LAST = 0;
const PRESENT = 1;
const CONNECTIONS = 2;
const HAS_LAST = 3;
const MISMATCHED_BLOCK_SIZE = 4;
const FIRST_COUNTER = 5;
const RECORD_SLOTS = FIRST_COUNTER + COUNTERS.length;

/**
 * A record as read, every field in place: a copy of it is one allocation, where a literal given its
 * counters one by one grew its property store five times (~590 bytes a record, ~200 with this; the
 * main thread reads every source that changed each second).
 */
const BLANK_READ: SourceStats = {
  source: { workerId: 0n, dpRank: 0 },
  connections: 0,
  lastSequence: null,
  mismatchedBlockSize: 0,
  ...(Object.fromEntries(COUNTERS.map((c) => [c, 0])) as unknown as IngestCounters),
};

/** The ranks of one worker's subscription (a KvEventEndpointConfig's). */
export interface BoardRanks {
  workerId: bigint;
  dpStartRank: number;
  dpSize: number;
}

/**
 * One subscription's counters, a record per rank. A plain write of an 8-byte slot is never torn, and
 * a reader may see one counter of a burst updated before another: a scrape is a sample anyway.
 */
export class StatsBoard {
  private readonly f: Float64Array;
  private readonly u: BigUint64Array;
  /** The slots as 32-bit words, compared bit for bit (a double's NaN is not equal to itself). */
  private readonly words: Int32Array;
  /** Reader side: each record's words as last read, and the object made from them. */
  private readonly seen: Int32Array;
  private readonly made: (SourceStats | undefined)[] = [];
  /** Each record's source key, made at its first read (the same object in every read). */
  private readonly sources: SourceStats['source'][] = [];
  /** The last read's list: handed out again while no record changed or appeared. */
  private last: SourceStats[] = [];

  constructor(
    private readonly ranks: BoardRanks,
    /** A fresh board's memory, or the memory of one made on another thread. */
    readonly shared: SharedArrayBuffer = new SharedArrayBuffer(8 * RECORD_SLOTS * ranks.dpSize),
  ) {
    this.f = new Float64Array(shared);
    this.u = new BigUint64Array(shared);
    this.words = new Int32Array(shared);
    this.seen = new Int32Array(this.words.length);
  }

  /** Writer side: the live counters of `dpRank` (undefined outside the worker's ranks), zero at first. */
  record(dpRank: number): SourceStats | undefined {
    const index = dpRank - this.ranks.dpStartRank;
    if (!Number.isInteger(index) || index < 0 || index >= this.ranks.dpSize) return undefined;
    this.f[index * RECORD_SLOTS + PRESENT] = 1;
    return new SlotStats(this.f, this.u, index * RECORD_SLOTS, { workerId: this.ranks.workerId, dpRank });
  }

  /**
   * Plain copies of the records the writer took, by rank: the same object as the last read for a
   * record that did not change since, and the same list when none did (callers treat both as
   * read-only: the main thread reads every source each second, most of them idle).
   */
  read(): SourceStats[] {
    if (this.unchangedSinceRead()) return this.last;
    const out: SourceStats[] = [];
    for (let index = 0; index < this.ranks.dpSize; index++) {
      const at = index * RECORD_SLOTS;
      if (this.f[at + PRESENT] !== 1) continue;
      const last = this.made[index];
      if (last !== undefined && this.unchanged(at)) {
        out.push(last);
        continue;
      }
      // Words first, then the object: a write between the two shows as a change at the next read.
      for (let w = 2 * at; w < 2 * (at + RECORD_SLOTS); w++) this.seen[w] = this.words[w];
      const s = { ...BLANK_READ };
      s.source = this.sources[index] ??= { workerId: this.ranks.workerId, dpRank: this.ranks.dpStartRank + index };
      s.connections = this.f[at + CONNECTIONS];
      s.lastSequence = this.f[at + HAS_LAST] === 1 ? this.u[at + LAST] : null;
      s.mismatchedBlockSize = this.f[at + MISMATCHED_BLOCK_SIZE];
      for (let c = 0; c < COUNTERS.length; c++) s[COUNTERS[c]] = this.f[at + FIRST_COUNTER + c];
      this.made[index] = s;
      out.push(s);
    }
    this.last = out;
    return out;
  }

  /** Whether every record the last read listed is unchanged and no other record was taken since. */
  private unchangedSinceRead(): boolean {
    let listed = 0;
    for (let index = 0; index < this.ranks.dpSize; index++) {
      const at = index * RECORD_SLOTS;
      if (this.f[at + PRESENT] !== 1) continue;
      if (this.made[index] === undefined || !this.unchanged(at)) return false;
      listed += 1;
    }
    return listed === this.last.length;
  }

  private unchanged(at: number): boolean {
    for (let w = 2 * at; w < 2 * (at + RECORD_SLOTS); w++) if (this.words[w] !== this.seen[w]) return false;
    return true;
  }
}

/** SourceStats whose numbers live in a board's slots (the counters' properties are defined below). */
class SlotStats {
  constructor(
    readonly slots: Float64Array,
    private readonly u: BigUint64Array,
    readonly at: number,
    readonly source: SourceStats['source'],
  ) {}

  get lastSequence(): bigint | null {
    return this.slots[this.at + HAS_LAST] === 1 ? this.u[this.at + LAST] : null;
  }

  set lastSequence(sequence: bigint | null) {
    this.u[this.at + LAST] = sequence ?? 0n;
    this.slots[this.at + HAS_LAST] = sequence === null ? 0 : 1;
  }
}
interface SlotStats extends IngestCounters {
  connections: number;
  mismatchedBlockSize: number;
}
defineSlotProperties(SlotStats.prototype, ['connections'], CONNECTIONS);
defineSlotProperties(SlotStats.prototype, ['mismatchedBlockSize'], MISMATCHED_BLOCK_SIZE);
defineSlotProperties(SlotStats.prototype, COUNTERS, FIRST_COUNTER);
