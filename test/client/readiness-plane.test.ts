import { applyReadinessUpdate } from '../../src/client/readiness-plane';
import { ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import { readinessUpdate, topologyEntry } from './fixtures';
import { changing, planeError } from './plane-steps';

const changed = changing(applyReadinessUpdate);

describe('readiness plane', () => {
  it('keeps entries and treats a same-revision repeat as a heartbeat', () => {
    const value = changed(undefined, readinessUpdate(1n, [topologyEntry('llama'), topologyEntry('qwen', ServingReadinessState.UNKNOWN)]));
    expect(value.entries.map((e) => e.canonicalModelId)).toEqual(['llama', 'qwen']);
    expect(applyReadinessUpdate(value, readinessUpdate(1n, [topologyEntry('llama'), topologyEntry('qwen', ServingReadinessState.UNKNOWN)]))).toEqual({
      kind: 'heartbeat',
    });
  });

  it('quarantines an entry with an unknown state or role and keeps the rest', () => {
    const unknownState = topologyEntry('qwen', 7);
    const unknownRole = { ...topologyEntry('mistral'), presentRoles: [42] };
    const value = changed(undefined, readinessUpdate(2n, [topologyEntry('llama'), unknownState, unknownRole]));
    expect(value.entries.map((e) => e.canonicalModelId)).toEqual(['llama']);
    expect(value.quarantined.map((q) => q.index)).toEqual([1, 2]);
  });

  it.each([
    ['MissingTopologyMembers', [{ ...topologyEntry('llama'), members: [] }]],
    ['UnsupportedDuplicateEndpointRole', [{ ...topologyEntry('llama'), duplicateRoleEndpoints: [WorkerRole.ENCODE] }]],
    ['DuplicateTopologyEntry', [topologyEntry('llama'), topologyEntry('llama')]],
  ])('drops the plane on %s', (reason, entries) => {
    expect(planeError(() => applyReadinessUpdate(undefined, readinessUpdate(1n, entries))).reason).toBe(reason);
  });

  it('rejects backwards revisions and unannounced changes', () => {
    const value = changed(undefined, readinessUpdate(5n, [topologyEntry('llama')]));
    expect(planeError(() => applyReadinessUpdate(value, readinessUpdate(4n, [topologyEntry('llama')]))).reason).toBe('RevisionBackwards');
    expect(planeError(() => applyReadinessUpdate(value, readinessUpdate(5n, []))).reason).toBe('RevisionNotAdvanced');
  });
});
