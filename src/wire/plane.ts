// Plane-level validation shared by catalog and readiness updates. The contract: an invalid envelope,
// duplicate top-level keys, or entries that cannot be identified safely invalidate the whole plane;
// an entry with an unsupported (future) interpretation is quarantined and unrelated entries are kept.
import { WireViolation, type WireValidationError } from './validation';

export interface Quarantined<T> {
  index: number;
  entry: T;
  error: WireValidationError;
}

export type PlaneValidation<T> =
  | { readonly ok: true; readonly accepted: T[]; readonly quarantined: Quarantined<T>[] }
  | { readonly ok: false; readonly error: WireValidationError };

export interface PlaneRules<T> {
  /** Throws a WireViolation when the envelope is invalid. */
  envelope(): void;
  entries: readonly T[];
  /** Throws a WireViolation when the entry is invalid. */
  check(entry: T): void;
  /** Key of an accepted entry; a repeated key invalidates the plane. */
  key(entry: T): string;
  duplicate(entry: T): never;
}

export function validatePlane<T>(rules: PlaneRules<T>): PlaneValidation<T> {
  try {
    rules.envelope();
    const accepted: T[] = [];
    const quarantined: Quarantined<T>[] = [];
    const keys = new Set<string>();
    rules.entries.forEach((entry, index) => {
      try {
        rules.check(entry);
      } catch (e) {
        if (e instanceof WireViolation && e.error.unsupported) {
          quarantined.push({ index, entry, error: e.error });
          return;
        }
        throw e;
      }
      const key = rules.key(entry);
      if (keys.has(key)) rules.duplicate(entry);
      keys.add(key);
      accepted.push(entry);
    });
    return { ok: true, accepted, quarantined };
  } catch (e) {
    if (e instanceof WireViolation) return { ok: false, error: e.error };
    throw e;
  }
}
