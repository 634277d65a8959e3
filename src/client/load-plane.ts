// The pool-load and serving-load planes: every message is a complete window with a strictly
// increasing window_sequence; older or repeated windows are ignored. Pure reducers over the wire
// validators (identity-topology-load.md §2.1): a bad window invalidates the plane, an unsupported
// entry is quarantined, a malformed entry invalidates the plane.
import { producerKey } from '../wire/producer-key';
import type {
  KvPoolLoadEntry,
  KvPoolLoadUpdate,
  ModelServingLoad,
  PoolServingLoad,
  RelayIdentity,
  ServingLoadUpdate,
} from '../wire/types';
import {
  validateKvPoolLoadEntry,
  validateKvPoolLoadUpdate,
  validateModelServingLoad,
  validatePoolServingLoad,
  validateServingLoadUpdate,
  type WireValidation,
} from '../wire/validate';
import { checkStreamRelay, requireValid } from './envelope';
import { PlaneError, type Plane, type Quarantined } from './plane-error';
import { readinessKey } from './readiness-plane';

interface Window {
  relay: RelayIdentity;
  windowSequence: bigint;
  observedMs: bigint;
  windowMs: bigint;
  quarantined: Quarantined[];
}

export interface PoolLoadValue extends Window {
  /** By producer key. */
  pools: Map<string, KvPoolLoadEntry>;
}

export interface ServingLoadValue extends Window {
  /** By producer key. */
  pools: Map<string, PoolServingLoad>;
  /** By readinessKey(namespace, canonical model id). */
  models: Map<string, ModelServingLoad>;
}

export type WindowStep<T> = { kind: 'stale' } | { kind: 'changed'; value: T };

/** Keeps supported entries by key (keys are unique: the window validator checked them). */
function collect<T>(plane: Plane, items: T[], check: (item: T) => WireValidation, key: (item: T) => string, label: (item: T) => string, quarantined: Quarantined[]): Map<string, T> {
  const out = new Map<string, T>();
  items.forEach((item, index) => {
    const verdict = check(item);
    if (verdict.ok) {
      out.set(key(item), item);
    } else if (verdict.error.unsupported) {
      quarantined.push({ index, label: label(item), message: verdict.error.message });
    } else {
      throw new PlaneError(plane, verdict.error.kind, `entry ${index} (${label(item)}): ${verdict.error.message}`);
    }
  });
  return out;
}

const producerLabel = (p: { producer?: { poolId?: { dcId: bigint }; layoutGeneration: bigint } }): string =>
  p.producer?.poolId ? `dc ${p.producer.poolId.dcId.toString(16)} gen ${p.producer.layoutGeneration}` : '(no producer)';

export function applyPoolLoadUpdate(prev: PoolLoadValue | undefined, update: KvPoolLoadUpdate): WindowStep<PoolLoadValue> {
  requireValid('load', validateKvPoolLoadUpdate(update));
  const relay = checkStreamRelay('load', update.relay!, prev?.relay);
  if (prev && update.windowSequence <= prev.windowSequence) return { kind: 'stale' };
  const quarantined: Quarantined[] = [];
  const pools = collect('load', update.pools, validateKvPoolLoadEntry, (e) => producerKey(e.producer!), producerLabel, quarantined);
  return { kind: 'changed', value: { relay, windowSequence: update.windowSequence, observedMs: update.observedMs, windowMs: update.windowMs, quarantined, pools } };
}

export function applyServingLoadUpdate(prev: ServingLoadValue | undefined, update: ServingLoadUpdate): WindowStep<ServingLoadValue> {
  requireValid('servingLoad', validateServingLoadUpdate(update));
  const relay = checkStreamRelay('servingLoad', update.relay!, prev?.relay);
  if (prev && update.windowSequence <= prev.windowSequence) return { kind: 'stale' };
  const quarantined: Quarantined[] = [];
  const pools = collect('servingLoad', update.pools, validatePoolServingLoad, (p) => producerKey(p.producer!), producerLabel, quarantined);
  const models = collect(
    'servingLoad',
    update.models,
    validateModelServingLoad,
    (m) => readinessKey(m.namespace, m.canonicalModelId),
    (m) => `${m.namespace}/${m.canonicalModelId}`,
    quarantined,
  );
  return {
    kind: 'changed',
    value: { relay, windowSequence: update.windowSequence, observedMs: update.observedMs, windowMs: update.windowMs, quarantined, pools, models },
  };
}
