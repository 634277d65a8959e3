// Numbers that live in 8-byte slots of a buffer, behind ordinary properties: code that counts with
// `stats.events += n` writes shared memory that another thread reads when it is asked, with no
// message per change (an ingest thread's per-source counters, a thread-hosted pool's metrics).

/** What an object with slot properties holds: its slots, and where its first slot is. */
export interface SlotHolder {
  readonly slots: Float64Array;
  readonly at: number;
}

/**
 * Defines on `prototype` (of a class whose instances are SlotHolders) a number property per name,
 * the name at index i reading and writing slot `at + first + i`. On the prototype, so every instance
 * has the same shape (one inline-cache entry per property wherever it is counted).
 */
export function defineSlotProperties(prototype: object, names: readonly string[], first = 0): void {
  names.forEach((name, i) =>
    Object.defineProperty(prototype, name, {
      get(this: SlotHolder) {
        return this.slots[this.at + first + i];
      },
      set(this: SlotHolder, n: number) {
        this.slots[this.at + first + i] = n;
      },
    }),
  );
}
