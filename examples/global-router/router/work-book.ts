// What one router has outstanding at each pool of a DC: requests in flight, those awaiting their
// first token, their uncached prefill tokens and their prompt blocks. Exact for this router's own
// traffic and updated the moment a decision is made, a first token arrives or a response ends.
import { NO_WORK, type Candidate, type PoolWork } from './candidates';

export interface Booking {
  /** The first token came back: the request's prefill leaves the pool's pending work. Idempotent. */
  firstToken(): void;
  /** The request ended: it leaves the pool's in-flight work. Idempotent. */
  release(): void;
  /**
   * The request failed at the pool (connection refused or reset, no answer in time): it leaves the
   * in-flight work as release() does, and a router takes it as a sign of the DC's health.
   */
  fail(): void;
}

interface Outstanding {
  inflight: number;
  activeBlocks: number;
  /** Booking id → uncached prompt tokens, for requests awaiting their first token (in routing order). */
  prefills: Map<number, number>;
  prefillTokens: number;
}

export class WorkBook {
  /** Pool key → outstanding work (pools with nothing in flight are absent). */
  private readonly pools = new Map<string, Outstanding>();
  private nextId = 0;

  get(poolKey: string): Readonly<PoolWork> {
    const o = this.pools.get(poolKey);
    if (!o) return NO_WORK;
    return { inflight: o.inflight, awaitingFirstToken: o.prefills.size, pendingPrefillTokens: o.prefillTokens, pendingPrefills: [...o.prefills.values()], activeBlocks: o.activeBlocks };
  }

  /** Requests in flight over all pools. */
  get inflight(): number {
    let n = 0;
    for (const o of this.pools.values()) n += o.inflight;
    return n;
  }

  /** Counts a request routed to the candidate's pool until its first token and its release. */
  book(chosen: Candidate): Booking {
    const id = this.nextId++;
    const prefill = chosen.promptTokens - Math.min(chosen.matchedTokens ?? 0, chosen.promptTokens);
    const blocks = Math.ceil(chosen.promptTokens / chosen.blockSize);
    let o = this.pools.get(chosen.poolKey);
    if (!o) this.pools.set(chosen.poolKey, (o = { inflight: 0, activeBlocks: 0, prefills: new Map(), prefillTokens: 0 }));
    const pool = o;
    pool.inflight++;
    pool.activeBlocks += blocks;
    pool.prefills.set(id, prefill);
    pool.prefillTokens += prefill;
    let prefilled = false;
    let released = false;
    const firstToken = () => {
      if (prefilled || released) return;
      prefilled = true;
      pool.prefills.delete(id);
      pool.prefillTokens -= prefill;
    };
    const release = () => {
      if (released) return;
      firstToken();
      released = true;
      pool.inflight--;
      pool.activeBlocks -= blocks;
      if (pool.inflight === 0) this.pools.delete(chosen.poolKey);
    };
    return { firstToken, release, fail: release };
  }
}
