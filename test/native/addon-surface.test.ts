// The production addons' surface: the core addon (what a consumer loads) has no pool, ingest or
// ZMQ export; the relay addon's packed layout is the one the JS encoder writes; the bench-only and
// vector-only entry points live only in the test/bench addon.
import { coreAddon, relayAddon } from '../../src/native/addon';
import { PoolEventBatch } from '../../src/native';
import { testingAddon } from '../support/native-testing';

const addon = relayAddon();

describe('core addon surface', () => {
  test('exports hashing, CKF and CBI1, and nothing of the pool, the decoder or ingest', () => {
    const core = Object.keys(coreAddon());
    expect(core).toEqual(expect.arrayContaining(['xxh3', 'sequenceHashes', 'hashBatchAsync', 'ckfPrepare', 'decodeFrame', 'SnapshotAssembly', 'nativeLimits']));
    for (const relayOnly of ['PoolFilterState', 'EngineBatchDecoder', 'ZmqSubscriber', 'zmqLibrary', 'packedBatchLayout', 'setThreadSlice', 'setThreadName', 'keptPageBytes']) {
      expect(core).not.toContain(relayOnly);
    }
    expect(Object.keys(addon)).not.toContain('xxh3');
    expect(coreAddon().nativeLimits).toEqual(addon.nativeLimits);
  });
});

describe('production addon surface', () => {
  test('exports no bench-only or vector-only entry points; the test addon has them', () => {
    const testOnly = ['benchPoolNative', 'benchPoolCanonicalNative', 'laneRngSeed', 'splitmixNext', 'CanonicalPool', 'xxh3BlocksBaseline'];
    for (const name of testOnly) {
      expect(Object.keys(addon)).not.toContain(name);
      expect(Object.keys(coreAddon())).not.toContain(name);
      expect(typeof (testingAddon as unknown as Record<string, unknown>)[name]).toBe('function');
    }
    const methods = Object.getOwnPropertyNames(addon.PoolFilterState.prototype);
    for (const raw of ['insertCanonical', 'removeCanonical', 'reofferCanonical', 'applyCanonicalBatch']) {
      expect(methods).not.toContain(raw);
    }
    expect(methods).toEqual(expect.arrayContaining(['applyBatchInto', 'applyBatchAsync', 'drain', 'stats', 'close']));
  });

  test('packedBatchLayout is frozen and is what PoolEventBatch writes', () => {
    const layout = addon.packedBatchLayout;
    for (const part of [layout, layout.meta, layout.kind, layout.flag, layout.errorNames]) expect(Object.isFrozen(part)).toBe(true);
    expect(layout.errorNames).toEqual([
      null,
      'ParentBlockNotFound',
      'InvalidBlockSequence',
      'OwnershipDegreeOverflow',
      'IndexerInvariantViolation',
      'AllocationFailed',
      'TrackedBlockLimit',
    ]);
    const batch = new PoolEventBatch()
      .addStored(7n, 3, 11n, 2, [21n, 22n], [31n, 32n])
      .addRemoved(8n, 4, [21n])
      .addCleared(9n, 5);
    const { meta, words } = batch.packed();
    const at = layout.meta;
    const stride = layout.metaStride;
    expect(meta.length).toBe(3 * stride);
    expect([meta[at.kind], meta[at.dpRank], meta[at.flags], meta[at.startPosition], meta[at.blockCount]]).toEqual([
      layout.kind.stored,
      3,
      layout.flag.parent | layout.flag.start,
      2,
      2,
    ]);
    expect([meta[stride + at.kind], meta[stride + at.blockCount], meta[2 * stride + at.kind]]).toEqual([
      layout.kind.removed,
      1,
      layout.kind.cleared,
    ]);
    expect(Array.from(words)).toEqual([7n, 11n, 21n, 22n, 31n, 32n, 8n, 21n, 9n]);
  });
});
