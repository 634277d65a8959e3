// Readiness validators: one TopologyEntry in the reference check order (identity-topology-load.md
// §2.1), and a whole ServingReadinessUpdate as a plane (this project's rule, see validate-catalog.ts).
import { WorkerRole, enumValueName, isKnownEnumValue } from './enums';
import { checkText } from './text';
import type { ServingReadinessUpdate, TopologyEntry } from './types';
import { checkEndpointId, checkPoolId, checkProtocolEnvelope, checkRoleSet, checkWorkerRoles } from './validate-identity';
import { checked, fail, type WireValidation } from './validation';
import { validatePlane, type PlaneValidation } from './plane';

function checkReadinessState(state: number): void {
  // UNKNOWN (0) is a valid state; only numbers outside the enum fail (always unsupported).
  if (!isKnownEnumValue('ServingReadinessState', state)) {
    fail('ReadinessState', `serving topology has unsupported readiness state ${state}`, { value: state });
  }
}

function checkDuplicateEndpointRoles(roles: readonly number[]): void {
  checkRoleSet(roles);
  for (const role of roles) {
    if (role !== WorkerRole.PREFILL && role !== WorkerRole.DECODE) {
      fail('UnsupportedDuplicateEndpointRole', `duplicate endpoint role ${enumValueName('WorkerRole', role)} is not supported`);
    }
  }
}

export function checkTopologyEntry(entry: TopologyEntry): void {
  checkText('topology namespace', entry.namespace);
  checkText('topology canonical model ID', entry.canonicalModelId);
  checkReadinessState(entry.state);
  checkRoleSet(entry.presentRoles);
  checkRoleSet(entry.missingRoles);
  checkDuplicateEndpointRoles(entry.duplicateRoleEndpoints);
  if (entry.members.length === 0) fail('MissingTopologyMembers', 'serving topology must contain at least one member');
  const endpoints = new Set<string>();
  for (const member of entry.members) {
    const endpoint = member.endpoint;
    if (!endpoint) fail('MissingField', 'topology member endpoint is missing', { field: 'topology member endpoint' });
    checkEndpointId(endpoint);
    if (endpoint.namespace !== entry.namespace) {
      fail(
        'TopologyNamespaceMismatch',
        `topology namespace ${JSON.stringify(entry.namespace)} does not match member namespace ${JSON.stringify(endpoint.namespace)}`,
      );
    }
    checkWorkerRoles(member.roles);
    if (member.poolId) checkPoolId(member.poolId);
    // Keyed by the tuple, not the dotted display form: backend.a/generate ≠ backend/a.generate.
    const key = JSON.stringify([endpoint.namespace, endpoint.component, endpoint.endpoint]);
    if (endpoints.has(key)) {
      const display = `${endpoint.namespace}.${endpoint.component}.${endpoint.endpoint}`;
      fail('DuplicateTopologyMember', `serving topology repeats endpoint ${JSON.stringify(display)}`);
    }
    endpoints.add(key);
  }
  const adapters = new Set<string>();
  for (const adapter of entry.adapters) {
    checkText('adapter canonical model ID', adapter.canonicalModelId);
    checkReadinessState(adapter.state);
    checkRoleSet(adapter.missingRoles);
    if (adapters.has(adapter.canonicalModelId)) {
      fail('DuplicateAdapter', `serving topology repeats adapter ${JSON.stringify(adapter.canonicalModelId)}`);
    }
    adapters.add(adapter.canonicalModelId);
  }
}

export const validateTopologyEntry = (entry: TopologyEntry): WireValidation => checked(() => checkTopologyEntry(entry));

/**
 * A readiness update as a plane: an invalid envelope, a missing relay identity, a malformed entry or
 * a repeated (namespace, canonical_model_id) invalidates the whole update; an unsupported entry is
 * quarantined and the others are kept.
 */
export function validateReadinessUpdate(update: ServingReadinessUpdate): PlaneValidation<TopologyEntry> {
  return validatePlane({
    envelope: () => {
      checkProtocolEnvelope(update.protocolVersion, update.contractMarker);
      if (!update.relay) fail('MissingField', 'relay identity is missing', { field: 'relay identity' });
    },
    entries: update.entries,
    check: checkTopologyEntry,
    key: (entry) => JSON.stringify([entry.namespace, entry.canonicalModelId]),
    duplicate: (entry) =>
      fail(
        'DuplicateTopologyEntry',
        `serving readiness repeats model ${JSON.stringify(entry.canonicalModelId)} in namespace ${JSON.stringify(entry.namespace)}`,
      ),
  });
}

