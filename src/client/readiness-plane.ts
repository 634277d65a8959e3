// The readiness plane: complete snapshots keyed by (namespace, canonical_model_id), re-sent as
// heartbeats with the same revision. Pure reducer; entry rules come from the wire validator
// (unsupported entries quarantined, malformed or repeated ones invalidate the plane).
import type { RelayIdentity, ServingReadinessUpdate, TopologyEntry } from '../wire/types';
import { validateReadinessUpdate } from '../wire/validate';
import { deepEqual } from './deep-equal';
import { acceptedEntries, checkStreamRelay } from './envelope';
import { PlaneError, type Quarantined } from './plane-error';

export interface ReadinessValue {
  relay: RelayIdentity;
  revision: bigint;
  /** Supported entries, in message order. */
  entries: TopologyEntry[];
  quarantined: Quarantined[];
  raw: TopologyEntry[];
}

export type ReadinessStep = { kind: 'heartbeat' } | { kind: 'changed'; value: ReadinessValue };

export function readinessKey(namespace: string, canonicalModelId: string): string {
  return JSON.stringify([namespace, canonicalModelId]);
}

export function applyReadinessUpdate(prev: ReadinessValue | undefined, update: ServingReadinessUpdate): ReadinessStep {
  const { accepted, quarantined } = acceptedEntries('readiness', validateReadinessUpdate(update), (e) => `${e.namespace}/${e.canonicalModelId}`);
  const relay = checkStreamRelay('readiness', update.relay!, prev?.relay);
  if (prev) {
    if (update.revision < prev.revision) {
      throw new PlaneError('readiness', 'RevisionBackwards', `revision went backwards (${prev.revision} -> ${update.revision})`);
    }
    if (update.revision === prev.revision) {
      if (!deepEqual(prev.raw, update.entries)) {
        throw new PlaneError('readiness', 'RevisionNotAdvanced', `content changed without advancing revision ${update.revision}`);
      }
      return { kind: 'heartbeat' };
    }
  }
  return { kind: 'changed', value: { relay, revision: update.revision, entries: accepted, quarantined, raw: update.entries } };
}
