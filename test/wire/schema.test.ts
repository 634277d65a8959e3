// relay.proto against wire-contract.md §2, transcribed field by field. Any difference in a message,
// field name, number, type or label, an enum value, or an RPC breaks a Dynamo consumer.
import * as protobuf from 'protobufjs';
import * as descriptor from 'protobufjs/ext/descriptor';
import { RELAY_PROTO_PATH, relayFileDescriptorProto, relayFileDescriptorSet, relayService } from '../../src/wire/proto';

// [message, field, number, type, label] — label: '' singular, 'repeated', 'optional' (proto3
// optional), 'oneof <name>'.
type Row = [string, string, number, string, string];

const FIELDS: Row[] = [
  // §2.3 identity
  ['RelayIdentity', 'drt_instance_id', 1, 'fixed64', ''],
  ['RelayIdentity', 'relay_incarnation', 2, 'fixed64', ''],
  ['DigestIdentity', 'digest', 1, 'bytes', ''],
  ['DigestIdentity', 'source', 2, 'IdentitySource', ''],
  ['IndexerDomainId', 'cache_semantics', 1, 'DigestIdentity', ''],
  ['IndexerDomainId', 'routing_scope', 2, 'DigestIdentity', ''],
  ['KvPoolId', 'identity_version', 1, 'uint32', ''],
  ['KvPoolId', 'indexer_domain', 2, 'IndexerDomainId', ''],
  ['KvPoolId', 'dc_id', 3, 'fixed64', ''],
  ['CkfFormat', 'format_version', 1, 'uint32', ''],
  ['CkfFormat', 'seed', 2, 'fixed64', ''],
  ['CkfFormat', 'bucket_count', 3, 'uint64', ''],
  ['CkfFormat', 'fingerprint_bits', 4, 'uint32', ''],
  ['CkfFormat', 'slots_per_bucket', 5, 'uint32', ''],
  ['ProducerIdentity', 'pool_id', 1, 'KvPoolId', ''],
  ['ProducerIdentity', 'producer_incarnation', 2, 'fixed64', ''],
  ['ProducerIdentity', 'layout_generation', 3, 'uint64', ''],
  ['ProducerIdentity', 'ckf_format', 4, 'CkfFormat', ''],
  // §2.4 catalog
  ['DynamoEndpointId', 'namespace', 1, 'string', ''],
  ['DynamoEndpointId', 'component', 2, 'string', ''],
  ['DynamoEndpointId', 'endpoint', 3, 'string', ''],
  ['BaseModelTarget', 'base_model', 1, 'string', ''],
  ['LoraModelTarget', 'base_model', 1, 'string', ''],
  ['LoraModelTarget', 'adapter', 2, 'string', ''],
  ['ModelTarget', 'base', 1, 'BaseModelTarget', 'oneof target'],
  ['ModelTarget', 'lora', 2, 'LoraModelTarget', 'oneof target'],
  ['ModelRegistration', 'canonical_model_id', 1, 'string', ''],
  ['ModelRegistration', 'target', 2, 'ModelTarget', ''],
  ['ModelRegistration', 'aliases', 3, 'string', 'repeated'],
  ['KvQuerySemantics', 'kv_block_size', 1, 'uint32', ''],
  ['KvQuerySemantics', 'hash_format', 2, 'KvQueryHashFormat', ''],
  ['KvPoolDescriptor', 'producer', 1, 'ProducerIdentity', ''],
  ['KvPoolDescriptor', 'serving_endpoint', 2, 'DynamoEndpointId', ''],
  ['KvPoolDescriptor', 'registrations', 3, 'ModelRegistration', 'repeated'],
  ['KvPoolDescriptor', 'query_semantics', 4, 'KvQuerySemantics', ''],
  ['KvPoolDescriptor', 'pool_roles', 5, 'WorkerRole', 'repeated'],
  ['KvPoolCatalogSnapshot', 'pools', 1, 'KvPoolDescriptor', 'repeated'],
  // §2.5 envelopes
  ['RelayInfoRequest', 'contract_marker', 127, 'fixed32', ''],
  ['RelayInfo', 'protocol_version', 1, 'uint32', ''],
  ['RelayInfo', 'relay', 2, 'RelayIdentity', ''],
  ['RelayInfo', 'contract_marker', 127, 'fixed32', ''],
  ['WatchKvPoolCatalogRequest', 'subscriber_id', 1, 'string', ''],
  ['WatchKvPoolCatalogRequest', 'contract_marker', 127, 'fixed32', ''],
  ['KvPoolCatalogUpdate', 'protocol_version', 1, 'uint32', ''],
  ['KvPoolCatalogUpdate', 'relay', 2, 'RelayIdentity', ''],
  ['KvPoolCatalogUpdate', 'revision', 3, 'uint64', ''],
  ['KvPoolCatalogUpdate', 'snapshot', 4, 'KvPoolCatalogSnapshot', ''],
  ['KvPoolCatalogUpdate', 'contract_marker', 127, 'fixed32', ''],
  ['SubscribeKvPoolRequest', 'subscriber_id', 1, 'string', ''],
  ['SubscribeKvPoolRequest', 'expected_producer', 2, 'ProducerIdentity', ''],
  ['SubscribeKvPoolRequest', 'contract_marker', 127, 'fixed32', ''],
  ['FilterUpdate', 'protocol_version', 1, 'uint32', ''],
  ['FilterUpdate', 'relay', 2, 'RelayIdentity', ''],
  ['FilterUpdate', 'producer', 3, 'ProducerIdentity', ''],
  ['FilterUpdate', 'base_sequence', 4, 'uint64', ''],
  ['FilterUpdate', 'sequence', 5, 'uint64', ''],
  ['FilterUpdate', 'send_ts_us', 6, 'uint64', ''],
  ['FilterUpdate', 'kind', 7, 'FilterUpdateKind', ''],
  ['FilterUpdate', 'payload', 8, 'bytes', ''],
  ['FilterUpdate', 'contract_marker', 127, 'fixed32', ''],
  ['SubscribeServingReadinessRequest', 'subscriber_id', 1, 'string', ''],
  ['SubscribeServingReadinessRequest', 'contract_marker', 127, 'fixed32', ''],
  ['ServingReadinessUpdate', 'protocol_version', 1, 'uint32', ''],
  ['ServingReadinessUpdate', 'relay', 2, 'RelayIdentity', ''],
  ['ServingReadinessUpdate', 'revision', 3, 'uint64', ''],
  ['ServingReadinessUpdate', 'entries', 4, 'TopologyEntry', 'repeated'],
  ['ServingReadinessUpdate', 'contract_marker', 127, 'fixed32', ''],
  ['SubscribeKvPoolLoadRequest', 'subscriber_id', 1, 'string', ''],
  ['SubscribeKvPoolLoadRequest', 'contract_marker', 127, 'fixed32', ''],
  ['KvPoolLoadUpdate', 'protocol_version', 1, 'uint32', ''],
  ['KvPoolLoadUpdate', 'relay', 2, 'RelayIdentity', ''],
  ['KvPoolLoadUpdate', 'window_sequence', 3, 'uint64', ''],
  ['KvPoolLoadUpdate', 'observed_ms', 4, 'uint64', ''],
  ['KvPoolLoadUpdate', 'window_ms', 5, 'uint64', ''],
  ['KvPoolLoadUpdate', 'pools', 6, 'KvPoolLoadEntry', 'repeated'],
  ['KvPoolLoadUpdate', 'contract_marker', 127, 'fixed32', ''],
  ['SubscribeServingLoadRequest', 'subscriber_id', 1, 'string', ''],
  ['SubscribeServingLoadRequest', 'contract_marker', 127, 'fixed32', ''],
  ['ServingLoadUpdate', 'protocol_version', 1, 'uint32', ''],
  ['ServingLoadUpdate', 'relay', 2, 'RelayIdentity', ''],
  ['ServingLoadUpdate', 'window_sequence', 3, 'uint64', ''],
  ['ServingLoadUpdate', 'observed_ms', 4, 'uint64', ''],
  ['ServingLoadUpdate', 'window_ms', 5, 'uint64', ''],
  ['ServingLoadUpdate', 'pools', 6, 'PoolServingLoad', 'repeated'],
  ['ServingLoadUpdate', 'models', 7, 'ModelServingLoad', 'repeated'],
  ['ServingLoadUpdate', 'contract_marker', 127, 'fixed32', ''],
  // §2.6 readiness
  ['TopologyMember', 'endpoint', 1, 'DynamoEndpointId', ''],
  ['TopologyMember', 'roles', 2, 'WorkerRole', 'repeated'],
  ['TopologyMember', 'pool_id', 3, 'KvPoolId', 'optional'],
  ['AdapterReadiness', 'canonical_model_id', 1, 'string', ''],
  ['AdapterReadiness', 'state', 2, 'ServingReadinessState', ''],
  ['AdapterReadiness', 'missing_roles', 3, 'WorkerRole', 'repeated'],
  ['TopologyEntry', 'namespace', 1, 'string', ''],
  ['TopologyEntry', 'canonical_model_id', 2, 'string', ''],
  ['TopologyEntry', 'state', 3, 'ServingReadinessState', ''],
  ['TopologyEntry', 'present_roles', 4, 'WorkerRole', 'repeated'],
  ['TopologyEntry', 'missing_roles', 5, 'WorkerRole', 'repeated'],
  ['TopologyEntry', 'members', 6, 'TopologyMember', 'repeated'],
  ['TopologyEntry', 'duplicate_role_endpoints', 7, 'WorkerRole', 'repeated'],
  ['TopologyEntry', 'legacy_fallback_active', 8, 'bool', ''],
  ['TopologyEntry', 'adapters', 9, 'AdapterReadiness', 'repeated'],
  // §2.7 load
  ['KvPoolLoadEntry', 'producer', 1, 'ProducerIdentity', ''],
  ['KvPoolLoadEntry', 'kv_used_blocks', 2, 'uint64', ''],
  ['KvPoolLoadEntry', 'total_kv_blocks', 3, 'uint64', ''],
  ['KvPoolLoadEntry', 'kv_observed_ranks', 4, 'uint32', ''],
  ['KvPoolLoadEntry', 'kv_expected_ranks', 5, 'uint32', ''],
  ['RequestLifecycleStats', 'requests_started_total', 1, 'uint64', ''],
  ['RequestLifecycleStats', 'requests_completed_total', 2, 'uint64', ''],
  ['RequestLifecycleStats', 'requests_failed_total', 3, 'uint64', ''],
  ['RequestLifecycleStats', 'requests_cancelled_total', 4, 'uint64', ''],
  ['RequestLifecycleStats', 'requests_awaiting_first_token', 5, 'uint64', 'optional'],
  ['RequestLifecycleStats', 'requests_generating', 6, 'uint64', 'optional'],
  ['TokenLoadStats', 'active_prefill_tokens', 1, 'uint64', 'optional'],
  ['TokenLoadStats', 'active_decode_blocks', 2, 'uint64', 'optional'],
  ['TokenLoadStats', 'awaiting_first_token_input_tokens', 3, 'uint64', 'optional'],
  ['TokenLoadStats', 'inflight_input_tokens', 4, 'uint64', 'optional'],
  ['TokenLoadStats', 'input_tokens_total', 5, 'uint64', 'optional'],
  ['TokenLoadStats', 'output_tokens_total', 6, 'uint64', 'optional'],
  ['LoadView', 'requests', 1, 'RequestLifecycleStats', ''],
  ['LoadView', 'tokens', 2, 'TokenLoadStats', ''],
  ['LoadView', 'status', 3, 'DataStatus', ''],
  ['LoadView', 'source_observed_ms', 4, 'uint64', ''],
  ['PoolDeploymentStatus', 'live_workers', 1, 'uint64', 'optional'],
  ['PoolDeploymentStatus', 'max_concurrency', 2, 'uint64', 'optional'],
  ['PoolServingLoad', 'producer', 1, 'ProducerIdentity', ''],
  ['PoolServingLoad', 'load', 2, 'LoadView', ''],
  ['PoolServingLoad', 'deployment', 3, 'PoolDeploymentStatus', ''],
  ['ModelDeploymentStatus', 'expected_frontends', 1, 'uint64', ''],
  ['ModelDeploymentStatus', 'observed_frontends', 2, 'uint64', ''],
  ['ModelDeploymentStatus', 'ready_frontends', 3, 'uint64', ''],
  ['ModelDeploymentStatus', 'serving_pools', 4, 'KvPoolId', 'repeated'],
  ['ModelServingLoad', 'namespace', 1, 'string', ''],
  ['ModelServingLoad', 'canonical_model_id', 2, 'string', ''],
  ['ModelServingLoad', 'load', 3, 'LoadView', ''],
  ['ModelServingLoad', 'deployment', 4, 'ModelDeploymentStatus', ''],
];

const ENUMS: Record<string, Record<string, number>> = {
  RelayErrorReason: {
    RELAY_ERROR_REASON_UNSPECIFIED: 0,
    RELAY_ERROR_REASON_CONTRACT_MISMATCH: 1,
    RELAY_ERROR_REASON_INVALID_REQUEST: 2,
    RELAY_ERROR_REASON_UNSUPPORTED_FEATURE: 3,
    RELAY_ERROR_REASON_POOL_NOT_FOUND: 4,
    RELAY_ERROR_REASON_PRODUCER_CHANGED: 5,
    RELAY_ERROR_REASON_RESOURCE_LIMIT: 6,
    RELAY_ERROR_REASON_SUBSCRIBER_LAGGED: 7,
    RELAY_ERROR_REASON_SNAPSHOT_PROGRESS_TIMEOUT: 8,
    RELAY_ERROR_REASON_PUBLICATION_UNAVAILABLE: 9,
    RELAY_ERROR_REASON_INVALID_PUBLICATION: 10,
    RELAY_ERROR_REASON_INTERNAL: 11,
  },
  IdentitySource: { IDENTITY_SOURCE_UNSPECIFIED: 0, IDENTITY_SOURCE_DEFAULT_DERIVED: 1, IDENTITY_SOURCE_EXPLICIT: 2 },
  FilterUpdateKind: {
    FILTER_UPDATE_KIND_UNSPECIFIED: 0,
    FILTER_UPDATE_KIND_SNAPSHOT_CHUNK: 1,
    FILTER_UPDATE_KIND_DELTA: 2,
    FILTER_UPDATE_KIND_HEARTBEAT: 3,
  },
  ServingReadinessState: {
    SERVING_READINESS_STATE_UNKNOWN: 0,
    SERVING_READINESS_STATE_UNAVAILABLE: 1,
    SERVING_READINESS_STATE_READY: 2,
  },
  WorkerRole: {
    WORKER_ROLE_UNSPECIFIED: 0,
    WORKER_ROLE_PREFILL: 1,
    WORKER_ROLE_DECODE: 2,
    WORKER_ROLE_ENCODE: 3,
    WORKER_ROLE_AGGREGATED: 4,
    WORKER_ROLE_LEGACY: 5,
  },
  KvQueryHashFormat: {
    KV_QUERY_HASH_FORMAT_UNSPECIFIED: 0,
    KV_QUERY_HASH_FORMAT_DYNAMO_STANDARD_V1: 1,
    KV_QUERY_HASH_FORMAT_DYNAMO_EAGLE_V1: 2,
  },
  DataStatus: { DATA_STATUS_UNSPECIFIED: 0, DATA_STATUS_COMPLETE: 1, DATA_STATUS_DEGRADED: 2, DATA_STATUS_UNAVAILABLE: 3 },
};

// [rpc, request, response, server streaming]
const RPCS: [string, string, string, boolean][] = [
  ['GetRelayInfo', 'RelayInfoRequest', 'RelayInfo', false],
  ['WatchKvPoolCatalog', 'WatchKvPoolCatalogRequest', 'KvPoolCatalogUpdate', true],
  ['SubscribeKvPool', 'SubscribeKvPoolRequest', 'FilterUpdate', true],
  ['SubscribeServingReadiness', 'SubscribeServingReadinessRequest', 'ServingReadinessUpdate', true],
  ['SubscribeKvPoolLoad', 'SubscribeKvPoolLoadRequest', 'KvPoolLoadUpdate', true],
  ['SubscribeServingLoad', 'SubscribeServingLoadRequest', 'ServingLoadUpdate', true],
];

// keepCase: compare the proto's own snake_case names (the codec's root uses camelCase).
const pkg = new protobuf.Root().loadSync(RELAY_PROTO_PATH, { keepCase: true }).resolveAll().lookup('dynamo.kvrelay.v1') as protobuf.Namespace;

function label(field: protobuf.Field): string {
  if (field.repeated) return 'repeated';
  if (field.partOf) return field.options?.proto3_optional ? 'optional' : `oneof ${field.partOf.name}`;
  return '';
}

function actualRows(): Row[] {
  const rows: Row[] = [];
  for (const nested of pkg.nestedArray) {
    if (!(nested instanceof protobuf.Type)) continue;
    for (const f of nested.fieldsArray) rows.push([nested.name, f.name, f.id, f.type, label(f)]);
  }
  return rows;
}

const key = (r: Row) => `${r[0]}.${r[1]}`;

test('every message and field matches §2 exactly (no missing, no extra)', () => {
  const actual = new Map(actualRows().map((r) => [key(r), r]));
  for (const row of FIELDS) expect(actual.get(key(row))).toEqual(row);
  expect([...actual.keys()].sort()).toEqual(FIELDS.map(key).sort());
});

test('the package contains exactly the transcribed messages, enums and one service', () => {
  const messages = new Set(FIELDS.map((r) => r[0]));
  const names = pkg.nestedArray.map((n) => n.name).sort();
  expect(names).toEqual([...messages, ...Object.keys(ENUMS), 'KvEventRelay'].sort());
});

test.each(Object.entries(ENUMS))('enum %s values', (name, values) => {
  expect((pkg.lookup(name) as protobuf.Enum).values).toEqual(values);
});

test('service KvEventRelay has the six RPCs', () => {
  expect(relayService.fullName).toBe('.dynamo.kvrelay.v1.KvEventRelay');
  const actual = relayService.methodsArray.map((m) => [m.name, m.requestType, m.responseType, m.responseStream === true]);
  expect(actual).toEqual(RPCS);
  for (const m of relayService.methodsArray) expect(m.requestStream).toBeFalsy();
});

describe('reflection descriptor', () => {
  const FileDescriptorProto = (descriptor as unknown as { FileDescriptorProto: protobuf.Type }).FileDescriptorProto;
  const FileDescriptorSet = (descriptor as unknown as { FileDescriptorSet: protobuf.Type }).FileDescriptorSet;
  const file = FileDescriptorProto.toObject(FileDescriptorProto.decode(relayFileDescriptorProto), { enums: String }) as {
    name: string;
    package: string;
    syntax: string;
    messageType: { name: string; field: { name: string; number: number; typeName?: string; jsonName: string }[]; oneofDecl?: { name: string }[] }[];
    service: { name: string; method: { name: string; inputType: string; outputType: string }[] }[];
  };

  test('is a proto3 file of package dynamo.kvrelay.v1 named relay.proto', () => {
    expect(file).toMatchObject({ name: 'relay.proto', package: 'dynamo.kvrelay.v1', syntax: 'proto3' });
    expect(FileDescriptorSet.decode(relayFileDescriptorSet).toJSON().file).toHaveLength(1);
  });

  test('uses fully qualified type names, json names and protoc synthetic oneof names', () => {
    for (const m of file.messageType) {
      for (const f of m.field) {
        if (f.typeName !== undefined) expect(f.typeName.startsWith('.dynamo.kvrelay.v1.')).toBe(true);
        expect(f.jsonName).toBe(f.name.replace(/_([a-z0-9])/g, (_s, c: string) => c.toUpperCase()));
      }
    }
    const described = file.messageType.flatMap((m) => m.field.map((f) => `${m.name}.${f.name}=${f.number}`));
    expect(described.sort()).toEqual(FIELDS.map((r) => `${r[0]}.${r[1]}=${r[2]}`).sort());
    const member = file.messageType.find((m) => m.name === 'TopologyMember')!;
    expect(member.oneofDecl).toEqual([{ name: '_pool_id' }]);
    expect(file.service[0].method[2]).toMatchObject({
      name: 'SubscribeKvPool',
      inputType: '.dynamo.kvrelay.v1.SubscribeKvPoolRequest',
      outputType: '.dynamo.kvrelay.v1.FilterUpdate',
    });
  });
});
