// A KvPoolCatalogUpdate as a plane. There is no reference helper for catalog-level rules; the
// contract doc says an invalid envelope, duplicate top-level keys (two descriptors for one pool id),
// or descriptors that cannot be identified safely invalidate the whole catalog, while an unsupported
// descriptor is quarantined and the others are kept. Each snapshot is complete (no tombstones).
import { poolKey } from './producer-key';
import type { KvPoolCatalogUpdate, KvPoolDescriptor } from './types';
import { checkPoolDescriptor, checkProtocolEnvelope } from './validate-identity';
import { fail } from './validation';
import { validatePlane, type PlaneValidation } from './plane';

export function validateCatalogUpdate(update: KvPoolCatalogUpdate): PlaneValidation<KvPoolDescriptor> {
  return validatePlane({
    envelope: () => {
      checkProtocolEnvelope(update.protocolVersion, update.contractMarker);
      if (!update.relay) fail('MissingField', 'relay identity is missing', { field: 'relay identity' });
      if (!update.snapshot) fail('MissingField', 'catalog snapshot is missing', { field: 'catalog snapshot' });
    },
    entries: update.snapshot?.pools ?? [],
    check: checkPoolDescriptor,
    // Accepted descriptors are valid, so producer.poolId is present.
    key: (descriptor) => poolKey(descriptor.producer!.poolId!),
    duplicate: () => fail('DuplicateCatalogPool', 'catalog lists one pool more than once'),
  });
}
