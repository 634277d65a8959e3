// One data-parallel rank as vLLM's V1 scheduler runs it: every step fills a token budget, running
// requests first (a decoding request takes one token, a prefilling one a chunk of its prompt), then
// waiting requests in arrival order while the budget, max_num_seqs and free blocks last; a prefix
// hit reuses cached blocks; a running request that needs a block when none is free preempts the
// most recently admitted one (recomputed later). A step's duration comes from the calibrated cost
// model; what it changes (blocks stored and evicted, first tokens, finished requests) is applied at
// its end. Pure and deterministic: driven by DcEngine's event loop.
import { BlockPool, type Block } from './block-pool';
import { chainHash, ROOT_HASH } from './block-hash';
import type { EngineCalibration } from './calibration';
import { prefillPairs, stepMs } from './step-time';

export interface RankConfig {
  blockSize: number;
  capacityBlocks: number;
  /** vLLM max_num_seqs. */
  maxNumSeqs: number;
  /** vLLM max_num_batched_tokens: the step's token budget (chunked prefill). */
  maxBatchedTokens: number;
  calibration: EngineCalibration;
}

export interface EngineRequest {
  id: number;
  /** The prompt followed by the answer the request will generate. */
  tokens: Uint32Array;
  promptTokens: number;
  outputTokens: number;
}

/** A request on a rank. */
export interface Seq {
  req: EngineRequest;
  /** Chain hashes of its full blocks, computed as far as needed. */
  hashes: number[];
  blocks: Block[];
  /** Tokens whose KV is computed. */
  computed: number;
  generated: number;
  /** Leading blocks already offered to the prefix cache. */
  registered: number;
  /** Prompt tokens served from the cache when first admitted (null until then). */
  cachedTokens: number | null;
  firstTokenMs: number | null;
  preemptions: number;
}

/** A change a step made: blocks stored under one parent, in order, with their tokens. */
export interface StoredRun {
  hashes: number[];
  parent: number | null;
  tokens: Uint32Array;
}

export interface StepResult {
  endMs: number;
  removed: number[];
  stored: StoredRun[];
  firstTokens: Seq[];
  finished: Seq[];
}

interface Plan {
  endMs: number;
  items: { seq: Seq; tokens: number }[];
}

export function newSeq(req: EngineRequest): Seq {
  return { req, hashes: [], blocks: [], computed: 0, generated: 0, registered: 0, cachedTokens: null, firstTokenMs: null, preemptions: 0 };
}

const seqLen = (s: Seq) => s.req.promptTokens + s.generated;

export class Rank {
  readonly pool: BlockPool;
  readonly waiting: Seq[] = [];
  readonly running: Seq[] = [];
  private plan: Plan | null = null;

  constructor(
    readonly index: number,
    readonly config: RankConfig,
  ) {
    this.pool = new BlockPool(config.capacityBlocks);
  }

  /** When the step in flight ends, or null when the rank is idle. */
  get busyUntil(): number | null {
    return this.plan?.endMs ?? null;
  }

  get hasWork(): boolean {
    return this.running.length > 0 || this.waiting.length > 0;
  }

  /** Chain hashes of the seq's first `blocks` full blocks. */
  hashesOf(seq: Seq, blocks: number): number[] {
    const { blockSize } = this.config;
    const h = seq.hashes;
    for (let i = h.length; i < blocks; i++) h.push(chainHash(i === 0 ? ROOT_HASH : h[i - 1], seq.req.tokens, i * blockSize, (i + 1) * blockSize));
    return h;
  }

  /** Full blocks of the seq this rank could reuse now (at least one token is always computed). */
  reusableBlocks(seq: Seq): number {
    const limit = Math.floor((seqLen(seq) - 1) / this.config.blockSize);
    return this.pool.match(this.hashesOf(seq, limit), limit);
  }

  /** Tokens still to prefill on this rank: every waiting request's and the running ones' remainders. */
  pendingPrefillTokens(): number {
    let sum = 0;
    for (const s of this.waiting) sum += seqLen(s) - s.computed;
    for (const s of this.running) if (seqLen(s) - s.computed > 1) sum += seqLen(s) - s.computed;
    return sum;
  }

  enqueue(seq: Seq): void {
    this.waiting.push(seq);
  }

  /** Plans the next step at `nowMs` when there is work and no step in flight; returns whether one started. */
  start(nowMs: number): boolean {
    if (this.plan || !this.hasWork) return false;
    const { maxBatchedTokens, blockSize } = this.config;
    let budget = maxBatchedTokens;
    const items: Plan['items'] = [];
    let preempted = false;
    for (let i = 0; i < this.running.length && budget > 0; i++) {
      const seq = this.running[i];
      const tokens = Math.min(seqLen(seq) - seq.computed, budget);
      const needed = Math.ceil((seq.computed + tokens) / blockSize) - seq.blocks.length;
      let scheduled = true;
      while (this.pool.free < needed) {
        const victim = this.running.pop()!;
        this.preempt(victim);
        preempted = true;
        if (victim === seq) {
          scheduled = false;
          break;
        }
      }
      if (!scheduled) break;
      for (let b = 0; b < needed; b++) seq.blocks.push(this.pool.allocate());
      items.push({ seq, tokens });
      budget -= tokens;
    }
    if (!preempted) budget = this.admit(budget, items);
    if (items.length === 0) return false;
    let prefill = 0;
    let context = 0;
    let tokens = 0;
    for (const { seq, tokens: n } of items) {
      tokens += n;
      if (n === 1 && seq.generated > 0) context += seq.computed;
      else prefill += prefillPairs(seq.computed, n);
    }
    this.plan = { endMs: nowMs + stepMs(this.config.calibration, { tokens, prefillPairs: prefill, decodeContextTokens: context }), items };
    return true;
  }

  /** Applies the step in flight (it ends now). */
  finish(): StepResult {
    const plan = this.plan;
    if (!plan) throw new Error(`rank ${this.index} has no step in flight`);
    this.plan = null;
    const result: StepResult = { endMs: plan.endMs, removed: this.pool.drainRemoved(), stored: [], firstTokens: [], finished: [] };
    for (const { seq, tokens } of plan.items) {
      seq.computed += tokens;
      this.register(seq, result.stored);
      if (seq.computed < seqLen(seq)) continue;
      seq.generated++;
      if (seq.firstTokenMs === null) {
        seq.firstTokenMs = plan.endMs;
        result.firstTokens.push(seq);
      }
      if (seq.generated >= seq.req.outputTokens) {
        this.release(seq);
        this.running.splice(this.running.indexOf(seq), 1);
        result.finished.push(seq);
      }
    }
    return result;
  }

  private admit(budget: number, items: Plan['items']): number {
    const { blockSize, maxNumSeqs } = this.config;
    while (budget > 0 && this.waiting.length > 0 && this.running.length < maxNumSeqs) {
      const seq = this.waiting[0];
      const hit = this.reusableBlocks(seq);
      const hitTokens = hit * blockSize;
      const tokens = Math.min(seqLen(seq) - hitTokens, budget);
      const fresh = Math.ceil((hitTokens + tokens) / blockSize) - hit;
      if (fresh > this.pool.free - this.pool.evictableAmong(seq.hashes, hit)) break;
      this.waiting.shift();
      for (let b = 0; b < hit; b++) seq.blocks.push(this.pool.acquire(seq.hashes[b]));
      for (let b = 0; b < fresh; b++) seq.blocks.push(this.pool.allocate());
      seq.computed = hitTokens;
      seq.registered = hit;
      if (seq.cachedTokens === null) seq.cachedTokens = Math.min(hitTokens, seq.req.promptTokens);
      this.running.push(seq);
      items.push({ seq, tokens });
      budget -= tokens;
    }
    return budget;
  }

  /** Offers the seq's newly full, computed blocks to the prefix cache; the new ones become stored runs. */
  private register(seq: Seq, out: StoredRun[]): void {
    const { blockSize } = this.config;
    const full = Math.floor(seq.computed / blockSize);
    if (full <= seq.registered) return;
    const hashes = this.hashesOf(seq, full);
    let start = -1; // first block of the run being built
    const close = (end: number) => {
      if (start < 0) return;
      const tokens = seq.req.tokens.subarray(start * blockSize, end * blockSize);
      out.push({ hashes: hashes.slice(start, end), parent: start === 0 ? null : hashes[start - 1], tokens });
      start = -1;
    };
    for (let i = seq.registered; i < full; i++) {
      if (this.pool.register(seq.blocks[i], hashes[i])) {
        if (start < 0) start = i;
      } else {
        close(i); // an equal block is cached already: this one stays private
      }
    }
    close(full);
    seq.registered = full;
  }

  /** Recompute preemption: the blocks go back (cached ones stay reusable) and the request waits first in line. */
  private preempt(seq: Seq): void {
    this.release(seq);
    seq.computed = 0;
    seq.registered = 0;
    seq.preemptions++;
    this.waiting.unshift(seq);
  }

  /** Blocks go back last-first, so a request's tail is evicted before its prefix (as vLLM frees them). */
  private release(seq: Seq): void {
    for (let i = seq.blocks.length - 1; i >= 0; i--) this.pool.release(seq.blocks[i]);
    seq.blocks = [];
  }
}
