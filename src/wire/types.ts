// One interface per dynamo.kvrelay.v1 message (proto/relay.proto, wire-contract.md §2).
// Field names are camelCase proto names; uint64/fixed64 → bigint; uint32/fixed32/enums → number
// (raw, possibly unknown values — see enums.ts); bytes → Uint8Array; repeated → arrays.
// Message fields and proto3 `optional` scalars are optional (`?:`) because the wire can omit them;
// every other scalar is always present after decoding (proto3 default when absent on the wire).

// ---- identity ----

export interface RelayIdentity {
  drtInstanceId: bigint; // fixed64
  relayIncarnation: bigint; // fixed64
}

export interface DigestIdentity {
  digest: Uint8Array; // exactly 16 bytes when valid
  source: number; // IdentitySource
}

export interface IndexerDomainId {
  cacheSemantics?: DigestIdentity;
  routingScope?: DigestIdentity;
}

export interface KvPoolId {
  identityVersion: number;
  indexerDomain?: IndexerDomainId;
  dcId: bigint; // fixed64
}

export interface CkfFormat {
  formatVersion: number;
  seed: bigint; // fixed64
  bucketCount: bigint;
  fingerprintBits: number;
  slotsPerBucket: number;
}

export interface ProducerIdentity {
  poolId?: KvPoolId;
  producerIncarnation: bigint; // fixed64
  layoutGeneration: bigint;
  ckfFormat?: CkfFormat;
}

// ---- catalog ----

export interface DynamoEndpointId {
  namespace: string;
  component: string;
  endpoint: string;
}

export interface BaseModelTarget {
  baseModel: string;
}

export interface LoraModelTarget {
  baseModel: string;
  adapter: string;
}

/** oneof `target`: at most one is set; neither set = an unknown future variant (unsupported). */
export interface ModelTarget {
  base?: BaseModelTarget;
  lora?: LoraModelTarget;
}

export interface ModelRegistration {
  canonicalModelId: string;
  target?: ModelTarget;
  aliases: string[];
}

export interface KvQuerySemantics {
  kvBlockSize: number;
  hashFormat: number; // KvQueryHashFormat
}

export interface KvPoolDescriptor {
  producer?: ProducerIdentity;
  servingEndpoint?: DynamoEndpointId;
  registrations: ModelRegistration[];
  querySemantics?: KvQuerySemantics;
  poolRoles: number[]; // WorkerRole
}

export interface KvPoolCatalogSnapshot {
  pools: KvPoolDescriptor[];
}

// ---- envelopes ----

export interface RelayInfoRequest {
  contractMarker: number;
}

export interface RelayInfo {
  protocolVersion: number;
  relay?: RelayIdentity;
  contractMarker: number;
}

export interface WatchKvPoolCatalogRequest {
  subscriberId: string;
  contractMarker: number;
}

export interface KvPoolCatalogUpdate {
  protocolVersion: number;
  relay?: RelayIdentity;
  revision: bigint;
  snapshot?: KvPoolCatalogSnapshot;
  contractMarker: number;
}

export interface SubscribeKvPoolRequest {
  subscriberId: string;
  expectedProducer?: ProducerIdentity;
  contractMarker: number;
}

export interface FilterUpdate {
  protocolVersion: number;
  relay?: RelayIdentity;
  producer?: ProducerIdentity;
  baseSequence: bigint;
  sequence: bigint;
  sendTsUs: bigint;
  kind: number; // FilterUpdateKind
  payload: Uint8Array; // a CBI1 frame, or empty for HEARTBEAT
  contractMarker: number;
}

export interface SubscribeServingReadinessRequest {
  subscriberId: string;
  contractMarker: number;
}

export interface ServingReadinessUpdate {
  protocolVersion: number;
  relay?: RelayIdentity;
  revision: bigint;
  entries: TopologyEntry[];
  contractMarker: number;
}

export interface SubscribeKvPoolLoadRequest {
  subscriberId: string;
  contractMarker: number;
}

export interface KvPoolLoadUpdate {
  protocolVersion: number;
  relay?: RelayIdentity;
  windowSequence: bigint;
  observedMs: bigint;
  windowMs: bigint;
  pools: KvPoolLoadEntry[];
  contractMarker: number;
}

export interface SubscribeServingLoadRequest {
  subscriberId: string;
  contractMarker: number;
}

/** A complete window: a pool or model absent from the next window is gone. */
export interface ServingLoadUpdate {
  protocolVersion: number;
  relay?: RelayIdentity;
  windowSequence: bigint;
  observedMs: bigint;
  windowMs: bigint;
  pools: PoolServingLoad[];
  models: ModelServingLoad[];
  contractMarker: number;
}

// ---- readiness ----

export interface TopologyMember {
  endpoint?: DynamoEndpointId;
  roles: number[]; // WorkerRole
  poolId?: KvPoolId; // absent when the endpoint has no materialized KV pool
}

export interface AdapterReadiness {
  canonicalModelId: string;
  state: number; // ServingReadinessState
  missingRoles: number[];
}

export interface TopologyEntry {
  namespace: string;
  canonicalModelId: string;
  state: number; // ServingReadinessState
  presentRoles: number[];
  missingRoles: number[];
  members: TopologyMember[];
  duplicateRoleEndpoints: number[]; // only PREFILL / DECODE
  legacyFallbackActive: boolean;
  adapters: AdapterReadiness[];
}

// ---- load ----

export interface KvPoolLoadEntry {
  producer?: ProducerIdentity;
  kvUsedBlocks: bigint;
  totalKvBlocks: bigint;
  kvObservedRanks: number;
  kvExpectedRanks: number;
}

export interface RequestLifecycleStats {
  requestsStartedTotal: bigint;
  requestsCompletedTotal: bigint;
  requestsFailedTotal: bigint;
  requestsCancelledTotal: bigint;
  requestsAwaitingFirstToken?: bigint;
  requestsGenerating?: bigint;
}

export interface TokenLoadStats {
  activePrefillTokens?: bigint;
  activeDecodeBlocks?: bigint;
  awaitingFirstTokenInputTokens?: bigint;
  inflightInputTokens?: bigint;
  inputTokensTotal?: bigint;
  outputTokensTotal?: bigint;
}

export interface LoadView {
  requests?: RequestLifecycleStats; // unset for pools
  tokens?: TokenLoadStats;
  status: number; // DataStatus
  sourceObservedMs: bigint;
}

export interface PoolDeploymentStatus {
  liveWorkers?: bigint;
  maxConcurrency?: bigint;
}

export interface PoolServingLoad {
  producer?: ProducerIdentity;
  load?: LoadView;
  deployment?: PoolDeploymentStatus;
}

export interface ModelDeploymentStatus {
  expectedFrontends: bigint;
  observedFrontends: bigint;
  readyFrontends: bigint;
  servingPools: KvPoolId[];
}

export interface ModelServingLoad {
  namespace: string;
  canonicalModelId: string;
  load?: LoadView;
  deployment?: ModelDeploymentStatus;
}

/** Every message type name, as in proto/relay.proto (package-relative). */
export interface WireMessages {
  RelayIdentity: RelayIdentity;
  DigestIdentity: DigestIdentity;
  IndexerDomainId: IndexerDomainId;
  KvPoolId: KvPoolId;
  CkfFormat: CkfFormat;
  ProducerIdentity: ProducerIdentity;
  DynamoEndpointId: DynamoEndpointId;
  BaseModelTarget: BaseModelTarget;
  LoraModelTarget: LoraModelTarget;
  ModelTarget: ModelTarget;
  ModelRegistration: ModelRegistration;
  KvQuerySemantics: KvQuerySemantics;
  KvPoolDescriptor: KvPoolDescriptor;
  KvPoolCatalogSnapshot: KvPoolCatalogSnapshot;
  RelayInfoRequest: RelayInfoRequest;
  RelayInfo: RelayInfo;
  WatchKvPoolCatalogRequest: WatchKvPoolCatalogRequest;
  KvPoolCatalogUpdate: KvPoolCatalogUpdate;
  SubscribeKvPoolRequest: SubscribeKvPoolRequest;
  FilterUpdate: FilterUpdate;
  SubscribeServingReadinessRequest: SubscribeServingReadinessRequest;
  ServingReadinessUpdate: ServingReadinessUpdate;
  SubscribeKvPoolLoadRequest: SubscribeKvPoolLoadRequest;
  KvPoolLoadUpdate: KvPoolLoadUpdate;
  SubscribeServingLoadRequest: SubscribeServingLoadRequest;
  ServingLoadUpdate: ServingLoadUpdate;
  TopologyMember: TopologyMember;
  AdapterReadiness: AdapterReadiness;
  TopologyEntry: TopologyEntry;
  KvPoolLoadEntry: KvPoolLoadEntry;
  RequestLifecycleStats: RequestLifecycleStats;
  TokenLoadStats: TokenLoadStats;
  LoadView: LoadView;
  PoolDeploymentStatus: PoolDeploymentStatus;
  PoolServingLoad: PoolServingLoad;
  ModelDeploymentStatus: ModelDeploymentStatus;
  ModelServingLoad: ModelServingLoad;
}

export type WireMessageName = keyof WireMessages;
