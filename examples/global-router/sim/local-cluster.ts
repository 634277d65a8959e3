// The cluster in this process, without relays: each DC's engine model called directly, and an
// oracle router that reads the engines' caches and load exactly (no lag, no network). It is the
// upper bound of what a relay-fed view can give, and what the fast calibration runs use; the
// evaluation itself runs the DCs in their own processes behind real relays (dc-process.ts).
import { DcEngine } from './engine/dc-engine';
import type { RankConfig } from './engine/rank';
import type { Candidate } from '../router/candidates';
import type { Policy } from '../router/policies';
import { WorkBook } from '../router/work-book';
import type { DcPort, RouteResult, RouterPort } from './driver';
import { engineRequest, promptTokens, type SimRequest } from './request';
import { chainHash, ROOT_HASH } from './engine/block-hash';

export class LocalDc implements DcPort {
  readonly engine: DcEngine;
  up = true;
  reachable = true;

  constructor(
    readonly name: string,
    ranks: number,
    config: RankConfig,
    readonly oneWayMs: number,
  ) {
    this.engine = new DcEngine(ranks, config);
  }

  async advance(toMs: number) {
    return this.engine.advance(toMs);
  }

  arrive(request: SimRequest, atMs: number): void {
    this.engine.arrive(engineRequest(request), atMs);
  }
}

/** Routes on the engines' exact state: the prefix any rank holds (as a relay's pool filter answers), exact KV usage. */
export class OracleRouter implements RouterPort {
  private readonly books = new Map<string, WorkBook>();

  constructor(
    private readonly dcs: readonly LocalDc[],
    private readonly policy: Policy,
    private readonly config: RankConfig,
    /** The request's TTFT target handed to the policy (none: the policy is not told). */
    private readonly ttftSloMs?: (request: SimRequest) => number,
  ) {
    for (const dc of dcs) this.books.set(dc.name, new WorkBook());
  }

  route(request: SimRequest): RouteResult {
    const tokens = promptTokens(request.prompt);
    const { blockSize, maxNumSeqs } = this.config;
    const hashes: number[] = [];
    for (let i = 0; (i + 1) * blockSize <= tokens.length; i++) hashes.push(chainHash(i === 0 ? ROOT_HASH : hashes[i - 1], tokens, i * blockSize, (i + 1) * blockSize));
    const candidates: Candidate[] = this.dcs
      .filter((dc) => dc.up)
      .map((dc) => {
        const ranks = dc.engine.ranks;
        let matched = 0;
        while (matched < hashes.length && ranks.some((r) => r.pool.has(hashes[matched]))) matched++;
        const used = ranks.reduce((n, r) => n + r.pool.used, 0);
        const total = ranks.reduce((n, r) => n + r.pool.capacity, 0);
        return {
          dc: dc.name,
          poolKey: dc.name,
          endpoint: 'sim.backend.generate',
          promptTokens: tokens.length,
          matchedTokens: this.policy.usesPrefix ? matched * blockSize : null,
          blockSize,
          ranks: ranks.length,
          capacity: maxNumSeqs * ranks.length,
          kvUsage: used / total,
          rttMs: 2 * dc.oneWayMs,
          ...this.books.get(dc.name)!.get(dc.name),
          lastResort: false,
        };
      });
    if (candidates.length === 0) return { dc: null, matchedTokens: null, booking: { firstToken: () => undefined, release: () => undefined, fail: () => undefined } };
    const chosen = this.policy.choose(candidates, { tokens, ttftSloMs: this.ttftSloMs?.(request) });
    return { dc: chosen.dc, matchedTokens: chosen.matchedTokens, booking: this.books.get(chosen.dc)!.book(chosen) };
  }
}
