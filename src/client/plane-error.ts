// A message that makes a whole plane untrustworthy (consumer.md §1.8): the plane value is dropped
// and its stream reopened. Entry-level problems of a supported plane are quarantined instead.
export type Plane = 'catalog' | 'readiness' | 'load' | 'servingLoad';

export class PlaneError extends Error {
  constructor(
    readonly plane: Plane,
    readonly reason: string,
    message: string,
  ) {
    super(`${plane}: ${message}`);
    this.name = 'PlaneError';
  }
}

/** One entry skipped because it uses semantics this consumer does not support. */
export interface Quarantined {
  /** Index of the entry in the message. */
  index: number;
  /** Best-effort label (pool id, namespace/model) for diagnostics. */
  label: string;
  message: string;
}
