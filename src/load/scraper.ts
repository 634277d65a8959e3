// Scrapes each worker's vLLM metrics endpoint once per load window (relay-config.md, Details: load).
//
// Input: one MetricsTarget per worker that has a `metrics.url`, with the worker's declared rank range.
// A round fetches every target concurrently (timeout = one window). A successful scrape replaces the
// worker's usage with what it reported for its declared ranks; a failed one (error, timeout, non-2xx)
// clears it until the next success, so coverage drops instead of serving a stale value.
import { fetchWithDeadline } from '../fetch-deadline';
import { parseVllmKvUsage } from './prometheus';
import { usageByRank, type RankUsage } from './ranks';

export interface MetricsTarget {
  workerId: bigint;
  url: string;
  dpStartRank: number;
  dpSize: number;
}

/** Usage fraction per worker id, then per absolute rank; a worker or rank absent = not observed. */
export type UsageObservations = ReadonlyMap<bigint, RankUsage>;

export class MetricsScraper {
  private targets = new Map<bigint, MetricsTarget>();
  private readonly observed = new Map<bigint, RankUsage>();
  private readonly abort = new AbortController();
  private round: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  /** A round or the timer to the next one is pending (rounds stop once there are no targets). */
  private ticking = false;
  /** Counts changes of usage(): a reader keeps what it built from it while this stays. */
  private changes = 0;

  constructor(private readonly windowMs: number) {}

  /** Replaces the scraped set; a worker whose target changed loses its observations. */
  setTargets(targets: readonly MetricsTarget[]): void {
    const next = new Map<bigint, MetricsTarget>();
    for (const t of targets) {
      const old = this.targets.get(t.workerId);
      const same = old && t.url === old.url && t.dpStartRank === old.dpStartRank && t.dpSize === old.dpSize;
      // Keeping the old object lets a scrape in flight for an unchanged target still land.
      next.set(t.workerId, same ? old : t);
    }
    for (const [id, old] of this.targets) if (next.get(id) !== old && this.observed.delete(id)) this.changes += 1;
    this.targets = next;
    this.resume();
  }

  /**
   * Scrapes now and then once per window, never overlapping rounds, while there are targets: without
   * any (no worker has a `metrics.url`, the common case) no round runs and no timer wakes the relay;
   * the first targets set start the rounds again.
   */
  start(): void {
    this.started = true;
    this.resume();
  }

  /** Starts the rounds if they are stopped, started and there is something to scrape. */
  private resume(): void {
    if (!this.started || this.ticking || this.targets.size === 0 || this.abort.signal.aborted) return;
    this.ticking = true;
    void this.tick();
  }

  private async tick(): Promise<void> {
    const started = Date.now();
    await this.scrapeAll();
    this.timer = undefined;
    if (this.abort.signal.aborted || this.targets.size === 0) {
      this.ticking = false;
      return;
    }
    this.timer = setTimeout(() => void this.tick(), Math.max(0, this.windowMs - (Date.now() - started)));
  }

  /** One round over all targets; a call during a running round joins that round. */
  scrapeAll(): Promise<void> {
    this.round ??= Promise.all([...this.targets.values()].map((t) => this.scrape(t))).then(() => {
      this.round = undefined;
    });
    return this.round;
  }

  /** Live: the same map, changed in place (see version). */
  usage(): UsageObservations {
    return this.observed;
  }

  /** Changes whenever usage() did (a scrape's answer or a lost one; a target dropped). */
  get version(): number {
    return this.changes;
  }

  close(): void {
    this.abort.abort();
    clearTimeout(this.timer);
  }

  private async scrape(target: MetricsTarget): Promise<void> {
    let usage: RankUsage | undefined;
    try {
      usage = await fetchWithDeadline(target.url, this.windowMs, this.abort.signal, async (res) => {
        if (res.ok) return usageByRank(parseVllmKvUsage(await res.text()), target.dpStartRank, target.dpSize);
        res.body?.cancel().catch(() => undefined);
        return undefined;
      });
    } catch {
      // No usable response: the observations are cleared below.
    }
    // The target may have been replaced or removed while the request was in flight.
    if (this.targets.get(target.workerId) !== target) return;
    const before = this.observed.get(target.workerId);
    if (usage) {
      // The same answer as last time is no change: what was built from it stays.
      if (before && sameUsage(before, usage)) return;
      this.observed.set(target.workerId, usage);
    } else if (!this.observed.delete(target.workerId)) return;
    this.changes += 1;
  }
}

function sameUsage(a: RankUsage, b: RankUsage): boolean {
  if (a.size !== b.size) return false;
  for (const [rank, usage] of a) if (b.get(rank) !== usage) return false;
  return true;
}
