// Per-process identities of a running Relay (identity-topology-load.md §1.5–§1.6).
import { randomBytes } from 'crypto';
import type { RelayIdentity } from '../wire/types';

const I64_MAX = (1n << 63n) - 1n;

function randomU64(): bigint {
  return randomBytes(8).readBigUInt64LE(0);
}

/** relay_incarnation: 63 random bits from the OS CSPRNG, fresh on every Relay start. */
export function newRelayIncarnation(): bigint {
  return randomU64() & I64_MAX;
}

/**
 * drt_instance_id: the reference uses the Dynamo runtime's connection id. A standalone Relay has no
 * runtime, so one random 64-bit id per process stands in for it (stable across in-process restarts).
 */
export const PROCESS_DRT_INSTANCE_ID: bigint = randomU64();

/** A RelayIdentity for one Relay start: the process's instance id and a fresh incarnation. */
export function newRelayIdentity(drtInstanceId: bigint = PROCESS_DRT_INSTANCE_ID): RelayIdentity {
  return { drtInstanceId, relayIncarnation: newRelayIncarnation() };
}
