// Assertions on the pure plane reducers (catalog, readiness, load): a step that must change the
// value, and an update the plane must refuse.
import { PlaneError } from '../../src/client/plane-error';

type Step<V> = { kind: 'changed'; value: V } | { kind: 'heartbeat' } | { kind: 'stale' };

/** `apply`, failing the test unless the update changes the value; returns the new value. */
export function changing<V, U>(apply: (prev: V | undefined, update: U) => Step<V>): (prev: V | undefined, update: U) => V {
  return (prev, update) => {
    const step = apply(prev, update);
    if (step.kind !== 'changed') throw new Error(`expected a change, got ${step.kind}`);
    return step.value;
  };
}

/** The PlaneError `fn` throws; fails the test when it throws none. */
export function planeError(fn: () => unknown): PlaneError {
  try {
    fn();
  } catch (err) {
    if (err instanceof PlaneError) return err;
    throw err;
  }
  throw new Error('expected a PlaneError');
}
