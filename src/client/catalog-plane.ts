// The catalog plane: each message is a complete snapshot (no tombstones). Pure reducer over
// KvPoolCatalogUpdate following consumer.md §1.3 and identity-topology-load.md §2.2/§2.4: the wire
// validator quarantines unsupported pools and rejects malformed or repeated ones; this reducer adds
// the per-stream rules (constant relay identity, revisions never go back, a repeated revision must
// repeat its content exactly).
import { poolKey, producerKey } from '../wire/producer-key';
import type { KvPoolCatalogSnapshot, KvPoolCatalogUpdate, KvPoolDescriptor, RelayIdentity } from '../wire/types';
import { validateCatalogUpdate } from '../wire/validate';
import { deepEqual } from './deep-equal';
import { acceptedEntries, checkStreamRelay } from './envelope';
import { PlaneError, type Quarantined } from './plane-error';

/** A validated, supported catalog entry. */
export interface CatalogPool {
  /** Stable pool id (survives producer generations). */
  poolKey: string;
  /** Frozen v1 ProducerKey: changes with every producer generation. */
  producerKey: string;
  descriptor: KvPoolDescriptor;
}

export interface CatalogValue {
  relay: RelayIdentity;
  revision: bigint;
  pools: CatalogPool[];
  quarantined: Quarantined[];
  snapshot: KvPoolCatalogSnapshot;
}

export type CatalogStep = { kind: 'heartbeat' } | { kind: 'changed'; value: CatalogValue };

export function applyCatalogUpdate(prev: CatalogValue | undefined, update: KvPoolCatalogUpdate): CatalogStep {
  const { accepted, quarantined } = acceptedEntries('catalog', validateCatalogUpdate(update), endpointLabel);
  const relay = checkStreamRelay('catalog', update.relay!, prev?.relay);
  const snapshot = update.snapshot!;
  if (prev) {
    if (update.revision < prev.revision) {
      throw new PlaneError('catalog', 'RevisionBackwards', `revision went backwards (${prev.revision} -> ${update.revision})`);
    }
    if (update.revision === prev.revision) {
      if (!deepEqual(prev.snapshot, snapshot)) {
        throw new PlaneError('catalog', 'RevisionNotAdvanced', `content changed without advancing revision ${update.revision}`);
      }
      return { kind: 'heartbeat' };
    }
  }
  const pools = accepted.map((descriptor) => ({
    poolKey: poolKey(descriptor.producer!.poolId!),
    producerKey: producerKey(descriptor.producer!),
    descriptor,
  }));
  return { kind: 'changed', value: { relay, revision: update.revision, pools, quarantined, snapshot } };
}

export function endpointLabel(d: KvPoolDescriptor): string {
  const e = d.servingEndpoint;
  return e ? `${e.namespace}.${e.component}.${e.endpoint}` : '(no endpoint)';
}
