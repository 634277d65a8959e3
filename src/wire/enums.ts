// Wire enum values of dynamo.kvrelay.v1 (wire-contract.md §2.2). Decoded messages carry raw numbers:
// proto3 enums are open, so an unknown value (e.g. 99 or -1) survives decoding and the validators
// classify it as unsupported rather than reading it as a known default.

export const RelayErrorReason = {
  UNSPECIFIED: 0,
  CONTRACT_MISMATCH: 1,
  INVALID_REQUEST: 2,
  UNSUPPORTED_FEATURE: 3,
  POOL_NOT_FOUND: 4,
  PRODUCER_CHANGED: 5,
  RESOURCE_LIMIT: 6,
  SUBSCRIBER_LAGGED: 7,
  SNAPSHOT_PROGRESS_TIMEOUT: 8,
  PUBLICATION_UNAVAILABLE: 9,
  INVALID_PUBLICATION: 10,
  INTERNAL: 11,
} as const;
export type RelayErrorReason = (typeof RelayErrorReason)[keyof typeof RelayErrorReason];

export const IdentitySource = {
  UNSPECIFIED: 0,
  DEFAULT_DERIVED: 1,
  EXPLICIT: 2,
} as const;
export type IdentitySource = (typeof IdentitySource)[keyof typeof IdentitySource];

export const FilterUpdateKind = {
  UNSPECIFIED: 0,
  SNAPSHOT_CHUNK: 1,
  DELTA: 2,
  HEARTBEAT: 3,
} as const;
export type FilterUpdateKind = (typeof FilterUpdateKind)[keyof typeof FilterUpdateKind];

/** UNKNOWN (0) is a valid state, not "unset". */
export const ServingReadinessState = {
  UNKNOWN: 0,
  UNAVAILABLE: 1,
  READY: 2,
} as const;
export type ServingReadinessState = (typeof ServingReadinessState)[keyof typeof ServingReadinessState];

/** Numeric order equals the native role order: PREFILL < DECODE < ENCODE < AGGREGATED < LEGACY. */
export const WorkerRole = {
  UNSPECIFIED: 0,
  PREFILL: 1,
  DECODE: 2,
  ENCODE: 3,
  AGGREGATED: 4,
  LEGACY: 5,
} as const;
export type WorkerRole = (typeof WorkerRole)[keyof typeof WorkerRole];

export const KvQueryHashFormat = {
  UNSPECIFIED: 0,
  DYNAMO_STANDARD_V1: 1,
  DYNAMO_EAGLE_V1: 2,
} as const;
export type KvQueryHashFormat = (typeof KvQueryHashFormat)[keyof typeof KvQueryHashFormat];

export const DataStatus = {
  UNSPECIFIED: 0,
  COMPLETE: 1,
  DEGRADED: 2,
  UNAVAILABLE: 3,
} as const;
export type DataStatus = (typeof DataStatus)[keyof typeof DataStatus];

/** The proto enum value name prefix of each enum (proto style: UPPER_SNAKE of the enum name). */
const PREFIX = {
  RelayErrorReason: 'RELAY_ERROR_REASON_',
  IdentitySource: 'IDENTITY_SOURCE_',
  FilterUpdateKind: 'FILTER_UPDATE_KIND_',
  ServingReadinessState: 'SERVING_READINESS_STATE_',
  WorkerRole: 'WORKER_ROLE_',
  KvQueryHashFormat: 'KV_QUERY_HASH_FORMAT_',
  DataStatus: 'DATA_STATUS_',
} as const;

const ENUMS = {
  RelayErrorReason,
  IdentitySource,
  FilterUpdateKind,
  ServingReadinessState,
  WorkerRole,
  KvQueryHashFormat,
  DataStatus,
} as const;

export type WireEnumName = keyof typeof ENUMS;

/** Full proto value name (e.g. 'WORKER_ROLE_DECODE'), or undefined for a value the enum does not know. */
export function enumValueName(enumName: WireEnumName, value: number): string | undefined {
  for (const [short, v] of Object.entries(ENUMS[enumName])) {
    if (v === value) return PREFIX[enumName] + short;
  }
  return undefined;
}

/** Inverse of enumValueName: the number for an exact proto value name, or undefined. */
export function enumValueByName(enumName: WireEnumName, name: string): number | undefined {
  const prefix = PREFIX[enumName];
  if (!name.startsWith(prefix)) return undefined;
  const short = name.slice(prefix.length);
  const values = ENUMS[enumName] as Record<string, number>;
  return Object.prototype.hasOwnProperty.call(values, short) ? values[short] : undefined;
}

/** True when `value` is a value the enum defines (including its UNSPECIFIED/zero value). */
export function isKnownEnumValue(enumName: WireEnumName, value: number): boolean {
  return enumValueName(enumName, value) !== undefined;
}
