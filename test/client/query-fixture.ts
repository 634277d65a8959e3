// Three pools whose filters hold known prefixes of a prompt's sequence hashes, computed here with
// each pool's own semantics; the client's query must report exactly those prefix lengths.
import type { RelayClient } from '../../src/client/relay-client';
import type { PoolQueryResult, QueryResult } from '../../src/client/query';
import { DEFAULT_CKF_SEED } from '../../src/config/defaults';
import { ckfPrepare, saltSeed, sequenceHashes } from '../../src/native/hashing';
import { KvQueryHashFormat, WorkerRole } from '../../src/wire/enums';
import { poolKey } from '../../src/wire/producer-key';
import type { KvPoolDescriptor, ModelRegistration, ProducerIdentity } from '../../src/wire/types';
import { testPoolId, testProducer, type TestSource } from '../support/test-source';

const BUCKETS = 1024;

function descriptor(producer: ProducerIdentity, component: string, registrations: ModelRegistration[], kvBlockSize: number, hashFormat: number): KvPoolDescriptor {
  return {
    producer,
    servingEndpoint: { namespace: 'dynamo', component, endpoint: 'generate' },
    registrations,
    querySemantics: { kvBlockSize, hashFormat },
    poolRoles: [WorkerRole.AGGREGATED],
  };
}

/** Puts each hash's fingerprint into its first candidate bucket with a free slot. */
export function insert(words: BigUint64Array, hashes: ArrayLike<bigint>): Array<[number, bigint]> {
  const touched = new Map<number, bigint>();
  for (let i = 0; i < hashes.length; i++) {
    const p = ckfPrepare(hashes[i], words.length, DEFAULT_CKF_SEED);
    const bucket = [p.bucketA, p.bucketB].find((b) => slotsOf(words[b]).includes(0));
    if (bucket === undefined) throw new Error('fixture bucket full');
    const slot = slotsOf(words[bucket]).indexOf(0);
    words[bucket] |= BigInt(p.fingerprint) << BigInt(16 * slot);
    touched.set(bucket, words[bucket]);
  }
  return [...touched];
}

function slotsOf(word: bigint): number[] {
  return [0, 1, 2, 3].map((k) => Number((word >> BigInt(16 * k)) & 0xffffn));
}

const base = (model: string, aliases: string[] = []): ModelRegistration => ({ canonicalModelId: model, target: { base: { baseModel: model } }, aliases });

export function queryFixture(source: TestSource): { verify(client: RelayClient): void } {
  const tokens = Uint32Array.from({ length: 64 * 8 + 10 }, (_, i) => 1000 + i);
  const lora: ModelRegistration = { canonicalModelId: 'llama-tenant', target: { lora: { baseModel: 'llama', adapter: 'tenant-a' } }, aliases: [] };

  const p1 = testProducer({ pool: 1, bucketCount: BUCKETS });
  const f1 = source.attachPool(p1, descriptor(p1, 'backend-a', [base('llama', ['chat']), lora], 64, KvQueryHashFormat.DYNAMO_STANDARD_V1));
  const baseHashes64 = sequenceHashes(tokens, 64, false, saltSeed(null, null));
  const loraHashes64 = sequenceHashes(tokens, 64, false, saltSeed(null, 'tenant-a'));
  f1.publish([...insert(f1.words, baseHashes64.subarray(0, 5)), ...insert(f1.words, loraHashes64.subarray(0, 3))]);

  const p2 = testProducer({ pool: 2, bucketCount: BUCKETS });
  const f2 = source.attachPool(p2, descriptor(p2, 'backend-q', [base('qwen', ['chat'])], 16, KvQueryHashFormat.DYNAMO_EAGLE_V1));
  f2.publish(insert(f2.words, sequenceHashes(tokens, 16, true, saltSeed(null, null)).subarray(0, 2)));

  const p3 = testProducer({ pool: 3, bucketCount: BUCKETS });
  const f3 = source.attachPool(p3, descriptor(p3, 'backend-b', [base('llama')], 32, KvQueryHashFormat.DYNAMO_STANDARD_V1));
  f3.publish(insert(f3.words, sequenceHashes(tokens, 32, false, saltSeed(null, null)).subarray(0, 7)));

  const depths = (result: QueryResult): Record<string, [number | null, number | null, number]> => {
    if (result.kind !== 'ok') throw new Error(`query failed: ${result.kind}`);
    return Object.fromEntries(result.pools.map((p: PoolQueryResult) => [p.poolKey, [p.matchedBlocks, p.matchedTokens, p.queryBlocks]]));
  };
  const [k1, k2, k3] = [1, 2, 3].map((i) => poolKey(testPoolId(i)));

  return {
    verify(client) {
      expect(depths(client.query({ model: 'llama', tokens }))).toEqual({ [k1]: [5, 320, 8], [k3]: [7, 224, 16] });
      expect(depths(client.query({ model: 'llama-tenant', tokens }))).toEqual({ [k1]: [3, 192, 8] });
      expect(depths(client.query({ model: 'llama', lora: 'tenant-a', tokens }))).toEqual({ [k1]: [3, 192, 8] });
      expect(depths(client.query({ model: 'qwen', tokens }))).toEqual({ [k2]: [2, 32, 32] });
      expect(depths(client.query({ model: 'llama', tokens: tokens.subarray(0, 63) }))).toEqual({ [k1]: [0, 0, 0], [k3]: [1, 32, 1] });
      expect(client.query({ model: 'chat', tokens }).kind).toBe('ambiguousModel');
      expect(client.query({ model: 'mistral', tokens }).kind).toBe('unknownModel');
      expect(client.query({ model: 'llama-tenant', lora: 'other', tokens }).kind).toBe('loraMismatch');
    },
  };
}
