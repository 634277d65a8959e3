// layout_generation: one registry-wide counter; the first attach gets 1, each attach the next value,
// never 0 (identity-topology-load.md §1.5). Exhaustion is an error, not a wrap.
import { MAX_U64 } from '../config/limits';

export class LayoutGenerationCounter {
  private nextValue = 1n;

  /** The generation for the next attach. Throws a RangeError once u64 is exhausted. */
  next(): bigint {
    const value = this.nextValue;
    if (value > MAX_U64) throw new RangeError('layout generations exhausted');
    this.nextValue = value + 1n;
    return value;
  }

  /** The value the next call to next() returns (for diagnostics). */
  peek(): bigint {
    return this.nextValue;
  }
}
