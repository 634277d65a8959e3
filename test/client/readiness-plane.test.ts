import { PlaneError } from '../../src/client/plane-error';
import { applyReadinessUpdate, type ReadinessValue } from '../../src/client/readiness-plane';
import { ServingReadinessState, WorkerRole } from '../../src/wire/enums';
import { readinessUpdate, topologyEntry } from './fixtures';

function changed(prev: ReadinessValue | undefined, update: ReturnType<typeof readinessUpdate>): ReadinessValue {
  const step = applyReadinessUpdate(prev, update);
  if (step.kind !== 'changed') throw new Error('expected a change');
  return step.value;
}

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof PlaneError) return err.reason;
    throw err;
  }
  return 'none';
}

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
    expect(reasonOf(() => applyReadinessUpdate(undefined, readinessUpdate(1n, entries)))).toBe(reason);
  });

  it('rejects backwards revisions and unannounced changes', () => {
    const value = changed(undefined, readinessUpdate(5n, [topologyEntry('llama')]));
    expect(reasonOf(() => applyReadinessUpdate(value, readinessUpdate(4n, [topologyEntry('llama')])))).toBe('RevisionBackwards');
    expect(reasonOf(() => applyReadinessUpdate(value, readinessUpdate(5n, [])))).toBe('RevisionNotAdvanced');
  });
});
