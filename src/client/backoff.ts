// Reconnect delay: bounded exponential growth with equal jitter (consumer.md §1.4), so that many
// consumers of one Relay do not reconnect in lockstep after a restart.
import {
  CLIENT_BACKOFF_INITIAL_MS,
  CLIENT_BACKOFF_MAX_MS,
  CLIENT_RECOVERY_BACKOFF_MAX_MS,
  CLIENT_RECOVERY_WINDOW_MS,
} from '../config/defaults';

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Cap of the delay for recoveryWindowMs after recover() (clamped to initialMs..maxMs); default maxMs: no recovery phase. */
  recoveryMaxMs?: number;
  recoveryWindowMs?: number;
  /** U[0, 1); injectable so tests can pin the jitter. */
  random?: () => number;
  /** Injectable so tests can move through the recovery window. */
  now?: () => number;
}

export const DEFAULT_BACKOFF: BackoffOptions = {
  initialMs: CLIENT_BACKOFF_INITIAL_MS,
  maxMs: CLIENT_BACKOFF_MAX_MS,
  recoveryMaxMs: CLIENT_RECOVERY_BACKOFF_MAX_MS,
  recoveryWindowMs: CLIENT_RECOVERY_WINDOW_MS,
};

/** The recovery cap `options` give, within initialMs..maxMs (a custom maxMs below the default cap wins). */
export function recoveryMaxMs(options: BackoffOptions): number {
  return Math.max(options.initialMs, Math.min(options.recoveryMaxMs ?? options.maxMs, options.maxMs));
}

export class Backoff {
  private current: number;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly recoveryCapMs: number;
  /** Until when next() stays at most recoveryCapMs (0: no recovery phase). */
  private recoveringUntil = 0;

  constructor(private readonly options: BackoffOptions = DEFAULT_BACKOFF) {
    if (!(options.initialMs > 0) || !(options.maxMs >= options.initialMs)) {
      throw new RangeError(`backoff needs 0 < initialMs <= maxMs, got ${options.initialMs}/${options.maxMs}`);
    }
    if (options.recoveryWindowMs !== undefined && !(options.recoveryWindowMs >= 0)) {
      throw new RangeError(`backoff recoveryWindowMs must be >= 0, got ${options.recoveryWindowMs}`);
    }
    this.current = options.initialMs;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.recoveryCapMs = recoveryMaxMs(options);
  }

  /** The delay before the next attempt: base/2 + U[0, base/2]; the base then doubles up to maxMs. */
  next(): number {
    const base = this.now() < this.recoveringUntil ? Math.min(this.current, this.recoveryCapMs) : this.current;
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

  /**
   * Something that had worked broke: start again from the initial delay and stay under the recovery
   * cap for the recovery window, so that a peer back within it is tried again soon; past the window
   * the delay grows on to maxMs as usual.
   */
  recover(): void {
    this.reset();
    this.recoveringUntil = this.now() + (this.options.recoveryWindowMs ?? 0);
  }
}
