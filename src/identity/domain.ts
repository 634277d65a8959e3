// The Relay's derivation of an IndexerDomainId from a model card and its serving endpoint
// (resolution.rs, identity-topology-load.md §1.2): cache semantics from [source_path, else
// display_name] + block size + hash format; routing scope from [namespace, component, endpoint].
import { KvQueryHashFormat } from '../wire/enums';
import type { DynamoEndpointId, IndexerDomainId } from '../wire/types';
import { deriveCacheSemantics, deriveRoutingScope, type ExplicitIdentityMap } from './digests';

export interface IdentityCard {
  displayName: string;
  /** Unset ⇒ displayName is the default material. */
  sourcePath?: string;
  kvCacheBlockSize: number;
  enableEagle: boolean;
  indexerIdentity?: { semantics?: ExplicitIdentityMap; routingScope?: ExplicitIdentityMap };
}

export function queryHashFormat(enableEagle: boolean): number {
  return enableEagle ? KvQueryHashFormat.DYNAMO_EAGLE_V1 : KvQueryHashFormat.DYNAMO_STANDARD_V1;
}

export function deriveIndexerDomain(card: IdentityCard, endpoint: DynamoEndpointId): IndexerDomainId {
  const cacheSemantics = deriveCacheSemantics({
    defaults: [card.sourcePath ?? card.displayName],
    explicit: card.indexerIdentity?.semantics,
    kvBlockSize: card.kvCacheBlockSize,
    hashFormat: queryHashFormat(card.enableEagle),
  }).identity;
  const routingScope = deriveRoutingScope({
    defaults: [endpoint.namespace, endpoint.component, endpoint.endpoint],
    explicit: card.indexerIdentity?.routingScope,
  }).identity;
  return { cacheSemantics, routingScope };
}
