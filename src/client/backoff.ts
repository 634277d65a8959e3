// Reconnect delay: bounded exponential growth with equal jitter (consumer.md §1.4), so that many
// consumers of one Relay do not reconnect in lockstep after a restart.
import { CLIENT_BACKOFF_INITIAL_MS, CLIENT_BACKOFF_MAX_MS } from '../config/defaults';

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** U[0, 1); injectable so tests can pin the jitter. */
  random?: () => number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: CLIENT_BACKOFF_INITIAL_MS, maxMs: CLIENT_BACKOFF_MAX_MS };

export class Backoff {
  private current: number;
  private readonly random: () => number;

  constructor(private readonly options: BackoffOptions = DEFAULT_BACKOFF) {
    if (!(options.initialMs > 0) || !(options.maxMs >= options.initialMs)) {
      throw new RangeError(`backoff needs 0 < initialMs <= maxMs, got ${options.initialMs}/${options.maxMs}`);
    }
    this.current = options.initialMs;
    this.random = options.random ?? Math.random;
  }

  /** The delay before the next attempt: base/2 + U[0, base/2]; the base then doubles up to maxMs. */
  next(): number {
    const base = this.current;
    this.current = Math.min(base * 2, this.options.maxMs);
    return Math.round(base / 2 + this.random() * (base / 2));
  }

  /** The cap; a stream that stayed healthy at least this long counts as recovered. */
  get maxMs(): number {
    return this.options.maxMs;
  }

  /** After a recovery the next failure starts from the initial delay again. */
  reset(): void {
    this.current = this.options.initialMs;
  }
}
