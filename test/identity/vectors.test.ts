// Every case of the shared identity vectors (identity.json): card digests with their material bytes,
// and stable_dc_id with its material and relay acceptance.
import * as fs from 'fs';
import * as path from 'path';
import {
  deriveCacheSemantics,
  deriveIndexerDomain,
  deriveRoutingScope,
  dcIdMaterial,
  dcIdStringError,
  formatDcId,
  indexerDomainDisplay,
  poolIdDisplay,
  queryHashFormat,
  stableDcId,
  type IdentityCard,
} from '../../src/identity';
import { IdentitySource } from '../../src/wire/enums';

const VECTORS = path.resolve(__dirname, '..', '..', '..', 'shared', 'vectors');

interface CardCase {
  name: string;
  card: {
    display_name: string;
    source_path: string | null;
    kv_cache_block_size: number;
    enable_eagle: boolean;
    indexer_identity?: { semantics?: Record<string, string>; routing_scope?: Record<string, string> };
  };
  endpoint: { namespace: string; component: string; name: string };
  query_semantics: { kv_block_size: number; hash_format: string; identity_version: number };
  expected: {
    cache_semantics: { digest: string; source: string };
    routing_scope: { digest: string; source: string };
    indexer_domain: string;
    cache_material_hex: string;
    routing_material_hex: string;
  };
}

interface DcCase {
  input: string;
  dc_id: string;
  dc_id_hex: string;
  material_hex: string;
  relay_accepts: boolean;
}

const vectors = JSON.parse(fs.readFileSync(path.join(VECTORS, 'identity.json'), 'utf8')) as {
  cards: CardCase[];
  stable_dc_id: DcCase[];
  pool_id_display_example: { indexer_domain: string; dc_id_hex: string; display: string };
};

const SOURCE: Record<string, number> = {
  DefaultDerived: IdentitySource.DEFAULT_DERIVED,
  Explicit: IdentitySource.EXPLICIT,
};

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function toCard(c: CardCase['card']): IdentityCard {
  return {
    displayName: c.display_name,
    sourcePath: c.source_path ?? undefined,
    kvCacheBlockSize: c.kv_cache_block_size,
    enableEagle: c.enable_eagle,
    indexerIdentity: c.indexer_identity && {
      semantics: c.indexer_identity.semantics,
      routingScope: c.indexer_identity.routing_scope,
    },
  };
}

test('the vector file has the documented case counts', () => {
  expect(vectors.cards).toHaveLength(15);
  expect(vectors.stable_dc_id).toHaveLength(10);
});

describe.each(vectors.cards.map((c) => [c.name, c] as const))('card %s', (_name, c) => {
  const card = toCard(c.card);

  test('cache semantics material and digest', () => {
    const derived = deriveCacheSemantics({
      defaults: [card.sourcePath ?? card.displayName],
      explicit: card.indexerIdentity?.semantics,
      kvBlockSize: card.kvCacheBlockSize,
      hashFormat: queryHashFormat(card.enableEagle),
    });
    expect(derived.material.toString('hex')).toBe(c.expected.cache_material_hex);
    expect(hex(derived.identity.digest)).toBe(c.expected.cache_semantics.digest);
    expect(derived.identity.source).toBe(SOURCE[c.expected.cache_semantics.source]);
  });

  test('routing scope material and digest', () => {
    const derived = deriveRoutingScope({
      defaults: [c.endpoint.namespace, c.endpoint.component, c.endpoint.name],
      explicit: card.indexerIdentity?.routingScope,
    });
    expect(derived.material.toString('hex')).toBe(c.expected.routing_material_hex);
    expect(hex(derived.identity.digest)).toBe(c.expected.routing_scope.digest);
    expect(derived.identity.source).toBe(SOURCE[c.expected.routing_scope.source]);
  });

  test('indexer domain from card and endpoint', () => {
    const domain = deriveIndexerDomain(card, {
      namespace: c.endpoint.namespace,
      component: c.endpoint.component,
      endpoint: c.endpoint.name,
    });
    const display = indexerDomainDisplay({ identityVersion: 1, indexerDomain: domain, dcId: 0n });
    expect(display).toBe(c.expected.indexer_domain);
  });
});

describe.each(vectors.stable_dc_id.map((c) => [JSON.stringify(c.input).slice(0, 24), c] as const))(
  'stable_dc_id(%s)',
  (_label, c) => {
    test('material, value, display and relay acceptance', () => {
      expect(dcIdMaterial(c.input).toString('hex')).toBe(c.material_hex);
      expect(stableDcId(c.input)).toBe(BigInt(c.dc_id));
      expect(`0x${formatDcId(stableDcId(c.input))}`).toBe(`0x${c.dc_id_hex}`);
      expect(dcIdStringError(c.input) === undefined).toBe(c.relay_accepts);
    });
  },
);

test('pool id display example', () => {
  const ex = vectors.pool_id_display_example;
  const [cache, routing] = ex.indexer_domain.split(':');
  const poolId = {
    identityVersion: 1,
    indexerDomain: {
      cacheSemantics: { digest: Buffer.from(cache, 'hex'), source: IdentitySource.DEFAULT_DERIVED },
      routingScope: { digest: Buffer.from(routing, 'hex'), source: IdentitySource.DEFAULT_DERIVED },
    },
    dcId: BigInt(`0x${ex.dc_id_hex}`),
  };
  expect(poolIdDisplay(poolId)).toBe(ex.display);
});
