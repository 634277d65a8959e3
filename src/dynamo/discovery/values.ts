// Dynamo's discovery values (dynamo-event-plane-and-discovery.md §2-§3): serde_json of
// `DiscoveryInstance` (#[serde(tag = "type")]). Parsed losslessly (an instance id or a count above
// 2^53 stays exact, as a bigint) and checked loosely: fields the relay does not read are not
// checked, so a newer Dynamo's extra fields are ignored, as serde ignores unknown fields.
import { parse as parseLossless } from 'lossless-json';
import { z } from 'zod';
import { MAX_DP_SIZE, MAX_DYNAMO_VALUE_BYTES, MAX_U32 } from '../../config/limits';
import { endpointName } from '../../producer/deployment';

/** An integer: a JS number when safe, a bigint above 2^53 (never a rounded number). */
function losslessNumber(text: string): number | bigint {
  const n = Number(text);
  return /^-?\d+$/.test(text) && !Number.isSafeInteger(n) ? BigInt(text) : n;
}

const u64 = z.union([z.number().int().min(0), z.bigint().min(0n)]).transform((v) => BigInt(v));
const count = z.union([z.number().int().min(0), z.bigint().min(0n)]).transform((v) => (typeof v === 'bigint' ? Number.MAX_SAFE_INTEGER : v));
const optional = <T extends z.ZodType>(t: T) => t.nullish().transform((v) => v ?? undefined);
const stringMap = z.record(z.string(), z.string());

/** Dynamo's `EndpointId` (its endpoint under `name`); a part that is empty names no endpoint. */
const endpointId = z.object({ namespace: z.string().min(1), component: z.string().min(1), name: z.string().min(1) });
export type EndpointId = z.output<typeof endpointId>;

/** An EndpointId (its endpoint under `name`) as the relay names endpoints. */
export function endpointIdName(id: EndpointId): string {
  return endpointName({ namespace: id.namespace, component: id.component, endpoint: id.name });
}

/** The card fields the relay reads (identity-topology-load.md §5.1). */
export const cardSchema = z.object({
  display_name: z.string(),
  source_path: optional(z.string()),
  kv_cache_block_size: count,
  model_type: optional(z.string()),
  worker_type: optional(z.string()),
  needs: optional(z.array(z.array(z.string()))),
  lora: optional(z.object({ name: z.string() })),
  aliases: optional(z.array(z.string())),
  indexer_identity: optional(z.object({ semantics: optional(stringMap), routing_scope: optional(stringMap) })),
  runtime_config: optional(
    z.object({
      total_kv_blocks: optional(count),
      max_num_seqs: optional(count),
      // Ranks are u32 (WorkerWithDpRank.dp_rank); bounded before the relay walks a card's ranks.
      data_parallel_start_rank: optional(count.pipe(z.number().max(MAX_U32))),
      // identity-topology-load.md §4.1: 1..=4096.
      data_parallel_size: optional(count.pipe(z.number().max(MAX_DP_SIZE))),
      enable_local_indexer: optional(z.boolean()),
      enable_eagle: optional(z.boolean()),
      // The endpoint whose v1/event_sources describe this worker's KV state (§5.2); omitted: its serving endpoint.
      kv_state_endpoint: optional(endpointId),
    })
      // Range overflow is an error (§4.1): past 2^53 a rank walk would never end (r + 1 === r).
      .refine((rc) => (rc.data_parallel_start_rank ?? 0) + (rc.data_parallel_size ?? 1) - 1 <= MAX_U32, { message: 'data parallel rank range overflows u32' }),
  ),
});
export type Card = z.output<typeof cardSchema>;

const endpointFields = { namespace: z.string(), component: z.string(), endpoint: z.string(), instance_id: u64 };

export const instanceValue = z.object({ type: z.literal('Endpoint'), ...endpointFields });
export const modelValue = z.object({ type: z.literal('Model'), ...endpointFields, card_json: cardSchema, model_suffix: optional(z.string()) });
/**
 * A channel's scope, one shape: Dynamo's `EventScope` is `#[serde(tag = "kind", rename_all = "snake_case")]`
 * with `Namespace { name }`, `Component { namespace, component }` and `Endpoint { endpoint: EndpointId }`
 * (`EndpointId { namespace, component, name }`: nested), lib/runtime/src/discovery/mod.rs @020f5c17. The
 * newest KV publishers are endpoint-scoped (EventPublisher::for_endpoint_id), so each form is read and
 * brought to the flat one the relay uses. The flat form with any other kind stays accepted as before.
 */
const eventScope = z.union([
  z
    .object({ kind: z.literal('endpoint'), endpoint: endpointId })
    .transform((s) => ({ kind: s.kind as string, namespace: s.endpoint.namespace, component: s.endpoint.component as string | undefined, endpoint: s.endpoint.name as string | undefined })),
  z.object({ kind: z.literal('namespace'), name: z.string() }).transform((s) => ({ kind: s.kind as string, namespace: s.name, component: undefined as string | undefined, endpoint: undefined as string | undefined })),
  z.object({ kind: z.string(), namespace: z.string(), component: optional(z.string()), endpoint: optional(z.string()) }),
]);
export const eventChannelValue = z.object({
  type: z.literal('EventChannel'),
  scope: eventScope,
  topic: z.string(),
  instance_id: u64,
  transport: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('Nats'), config: z.object({ subject_prefix: z.string() }) }),
    z.object({ kind: z.literal('Zmq'), config: z.object({ endpoint: z.string() }) }),
    z.object({ kind: z.literal('ZmqBroker'), config: z.object({ xpub_endpoints: z.array(z.string()) }) }),
  ]),
});
/**
 * DiscoveryInstance::EventSource (newest revisions; identity-topology-load.md §5.2): written once by a
 * worker's KV publisher per (worker, dp rank), endpoint-scoped to its KV-state endpoint. `metadata` is
 * KvEventSource { kv_state_endpoint: EndpointId, worker: WorkerWithDpRank, publisher_id, recovery_target? }.
 */
export const eventSourceValue = z.object({
  type: z.literal('EventSource'),
  scope: eventScope,
  topic: z.string(),
  publisher_id: u64,
  metadata: z.object({
    kv_state_endpoint: endpointId,
    worker: z.object({ worker_id: u64, dp_rank: z.number().int().min(0).max(0xffff_ffff) }),
    publisher_id: u64,
    // A component::Instance; the relay reads only whether there is one (recoverable or live-only).
    recovery_target: optional(z.record(z.string(), z.unknown())),
  }),
});
export type EventSourceValue = z.output<typeof eventSourceValue>;
export type InstanceValue = z.output<typeof instanceValue>;
export type ModelValue = z.output<typeof modelValue>;
export type EventChannelValue = z.output<typeof eventChannelValue>;

/** The value checked by `schema`, or the problem as one line. */
export function parseValue<T extends z.ZodType>(text: string, schema: T): z.output<T> | string {
  if (Buffer.byteLength(text, 'utf8') > MAX_DYNAMO_VALUE_BYTES) return `is larger than ${MAX_DYNAMO_VALUE_BYTES} bytes`;
  let raw: unknown;
  try {
    raw = parseLossless(text, null, losslessNumber);
  } catch (err) {
    return `invalid JSON: ${(err as Error).message}`;
  }
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  return `${issue.path.join('.') || '(value)'}: ${issue.message}`;
}

/**
 * parseValue's results by key, kept by the caller across discovery passes: a value is parsed once per
 * change of its text, not on every pass (lossless-json takes ~100-200 ms for a value at the bound, and
 * every change anywhere under v1/ is a pass). Parsed values are shared between passes: never mutated.
 */
export type ParseMemo = Map<string, { text: string; result: unknown }>;

/** parseValue(text, schema), from `memo` while `key` holds the same text. */
export function parseEntry<T extends z.ZodType>(memo: ParseMemo | undefined, key: string, text: string, schema: T): z.output<T> | string {
  const hit = memo?.get(key);
  if (hit !== undefined && hit.text === text) return hit.result as z.output<T> | string;
  const result = parseValue(text, schema);
  memo?.set(key, { text, result });
  return result;
}
