import { applyCatalogUpdate, type CatalogValue } from '../../src/client/catalog-plane';
import { KvQueryHashFormat } from '../../src/wire/enums';
import { baseRegistration, catalogUpdate, descriptor, RELAY } from './fixtures';
import { changing, planeError } from './plane-steps';

const changed = changing(applyCatalogUpdate);

describe('catalog plane', () => {
  it('accepts a complete snapshot and keys pools by pool id and producer', () => {
    const value = changed(undefined, catalogUpdate(1n, [descriptor(1n), descriptor(2n)]));
    expect(value.revision).toBe(1n);
    expect(value.pools).toHaveLength(2);
    expect(new Set(value.pools.map((p) => p.poolKey)).size).toBe(2);
    expect(value.quarantined).toEqual([]);
  });

  it('treats an identical repeat of the revision as a heartbeat', () => {
    const value = changed(undefined, catalogUpdate(3n, [descriptor(1n)]));
    expect(applyCatalogUpdate(value, catalogUpdate(3n, [descriptor(1n)]))).toEqual({ kind: 'heartbeat' });
  });

  it('accepts skipped revisions and an empty snapshot', () => {
    const value = changed(undefined, catalogUpdate(3n, [descriptor(1n)]));
    expect(changed(value, catalogUpdate(9n, [])).pools).toEqual([]);
  });

  it.each([
    ['RevisionBackwards', (v: CatalogValue) => applyCatalogUpdate(v, catalogUpdate(2n, [descriptor(1n)]))],
    ['RevisionNotAdvanced', (v: CatalogValue) => applyCatalogUpdate(v, catalogUpdate(3n, [descriptor(2n)]))],
    ['RelayIdentityChanged', (v: CatalogValue) => applyCatalogUpdate(v, catalogUpdate(4n, [descriptor(1n)], { ...RELAY, relayIncarnation: 23n }))],
  ])('drops the plane on %s', (reason, step) => {
    const value = changed(undefined, catalogUpdate(3n, [descriptor(1n)]));
    expect(planeError(() => step(value)).reason).toBe(reason);
  });

  it('validates the envelope before anything else', () => {
    const bad = { ...catalogUpdate(1n, [descriptor(1n)]), contractMarker: 0 };
    expect(planeError(() => applyCatalogUpdate(undefined, bad)).reason).toBe('ContractMarker');
    const noRelay = { ...catalogUpdate(1n, [descriptor(1n)]), relay: undefined };
    expect(planeError(() => applyCatalogUpdate(undefined, noRelay)).reason).toBe('MissingField');
    const version = { ...catalogUpdate(1n, [descriptor(1n)]), protocolVersion: 2 };
    expect(planeError(() => applyCatalogUpdate(undefined, version)).reason).toBe('ProtocolVersion');
  });

  it('quarantines an unsupported pool and keeps the others', () => {
    const unknownFormat = descriptor(2n, [baseRegistration('llama')], { hashFormat: 99 });
    const unknownTarget = { ...descriptor(3n), registrations: [{ canonicalModelId: 'x', target: {}, aliases: [] }] };
    const value = changed(undefined, catalogUpdate(1n, [descriptor(1n), unknownFormat, unknownTarget]));
    expect(value.pools.map((p) => p.descriptor.producer!.poolId!.dcId)).toEqual([1n]);
    expect(value.quarantined.map((q) => q.index)).toEqual([1, 2]);
  });

  it('drops the whole plane for a malformed pool', () => {
    const zeroBlock = descriptor(2n, [baseRegistration('llama')], { kvBlockSize: 0 });
    expect(planeError(() => applyCatalogUpdate(undefined, catalogUpdate(1n, [descriptor(1n), zeroBlock]))).reason).toBe('ZeroQueryBlockSize');
    const unspecified = descriptor(2n, [baseRegistration('llama')], { hashFormat: KvQueryHashFormat.UNSPECIFIED });
    expect(planeError(() => applyCatalogUpdate(undefined, catalogUpdate(1n, [unspecified]))).reason).toBe('QueryHashFormat');
  });

  it('drops the whole plane for a repeated pool', () => {
    const again = descriptor(1n, [baseRegistration('other')], { generation: 2n });
    expect(planeError(() => applyCatalogUpdate(undefined, catalogUpdate(1n, [descriptor(1n), again]))).reason).toBe('DuplicateCatalogPool');
  });
});
