// The result model of every wire validator (identity-topology-load.md §2). Validators are pure:
// they never mutate their input and return a WireValidation instead of throwing. Each error is
// classified as *unsupported* (a future or unknown interpretation: quarantine the containing pool or
// topology entry) or *malformed* (§2.2).

export type WireErrorKind =
  | 'ProtocolVersion'
  | 'ContractMarker'
  | 'PoolIdentityVersion'
  | 'MissingField'
  | 'DigestLength'
  | 'IdentitySource'
  | 'ZeroFormatField'
  | 'UnsupportedCkfFormat'
  | 'BucketCountOverflow'
  | 'BucketCountTooLarge'
  | 'UnsupportedBucketCount'
  | 'ZeroLayoutGeneration'
  | 'ZeroQueryBlockSize'
  | 'QueryHashFormat'
  | 'InvalidText'
  | 'UnsupportedModelTarget'
  | 'DuplicateAlias'
  | 'MissingWorkerRoles'
  | 'WorkerRole'
  | 'DuplicateWorkerRole'
  | 'UnsupportedDuplicateEndpointRole'
  | 'ReadinessState'
  | 'MissingTopologyMembers'
  | 'DuplicateTopologyMember'
  | 'TopologyNamespaceMismatch'
  | 'DuplicateAdapter'
  | 'DataStatus'
  | 'LoadViewField'
  | 'DuplicateLoadPool'
  | 'DuplicateLoadModel'
  | 'DuplicateServingPool'
  // This project's plane-level rules (contract doc: duplicate top-level keys invalidate the plane).
  | 'DuplicateCatalogPool'
  | 'DuplicateTopologyEntry'
  // subscriber_id rules (wire-contract.md §5.1), always malformed → INVALID_REQUEST.
  | 'InvalidSubscriberId';

export interface WireValidationError {
  readonly kind: WireErrorKind;
  /** Diagnostic text; never parse it. */
  readonly message: string;
  /** True ⇒ unsupported (quarantine / UNSUPPORTED_FEATURE); false ⇒ malformed (INVALID_REQUEST). */
  readonly unsupported: boolean;
  /** The field name the rule names, when it names one. */
  readonly field?: string;
  /** The offending numeric value, when the rule carries one. */
  readonly value?: number | bigint;
}

export type WireValidation = { readonly ok: true } | { readonly ok: false; readonly error: WireValidationError };

export const VALID: WireValidation = Object.freeze({ ok: true });

/** §2.2: kinds that are unsupported whatever their value. */
const ALWAYS_UNSUPPORTED: ReadonlySet<WireErrorKind> = new Set<WireErrorKind>([
  'UnsupportedModelTarget',
  'UnsupportedCkfFormat',
  'ReadinessState',
  'BucketCountTooLarge',
  'BucketCountOverflow',
]);

/** §2.2: kinds that are unsupported for a non-zero value (an unknown future number) only. */
const UNSUPPORTED_UNLESS_ZERO: ReadonlySet<WireErrorKind> = new Set<WireErrorKind>([
  'PoolIdentityVersion',
  'QueryHashFormat',
  'WorkerRole',
  'DataStatus',
  'IdentitySource',
]);

export function isUnsupported(kind: WireErrorKind, value?: number | bigint): boolean {
  if (ALWAYS_UNSUPPORTED.has(kind)) return true;
  if (UNSUPPORTED_UNLESS_ZERO.has(kind)) return value !== undefined && value !== 0 && value !== 0n;
  return false;
}

/** Thrown inside validators and turned into a result at the exported boundary. */
export class WireViolation extends Error {
  constructor(readonly error: WireValidationError) {
    super(error.message);
  }
}

export function fail(kind: WireErrorKind, message: string, details: { field?: string; value?: number | bigint } = {}): never {
  throw new WireViolation(Object.freeze({ kind, message, unsupported: isUnsupported(kind, details.value), ...details }));
}

/** Runs a throwing check and returns its result object. */
export function checked(check: () => void): WireValidation {
  try {
    check();
    return VALID;
  } catch (e) {
    if (e instanceof WireViolation) return { ok: false, error: e.error };
    throw e;
  }
}
