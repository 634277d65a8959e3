// The pool id of a configured endpoint (identity-topology-load.md §1.1-§1.4): cache semantics from
// model.sourcePath (default model.name) or the explicit map, plus kvBlockSize and the hash-format
// version; routing scope from the endpoint triple or the explicit map; dc_id = stable_dc_id(dcId).
import type { EndpointConfig } from '../config/schema';
import { deriveIndexerDomain, poolIdDisplay, stableDcId } from '../identity';
import type { KvPoolId } from '../wire/types';
import { POOL_IDENTITY_VERSION } from '../wire/constants';

export function poolIdOf(ep: EndpointConfig, dcId: string): KvPoolId {
  const indexerDomain = deriveIndexerDomain(
    {
      displayName: ep.model.name,
      sourcePath: ep.model.sourcePath,
      kvCacheBlockSize: ep.model.kvBlockSize,
      enableEagle: ep.model.hashFormat === 'eagle',
      indexerIdentity: ep.indexerIdentity,
    },
    { namespace: ep.namespace, component: ep.component, endpoint: ep.endpoint },
  );
  return { identityVersion: POOL_IDENTITY_VERSION, indexerDomain, dcId: stableDcId(dcId) };
}
