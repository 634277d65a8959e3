import { applyPoolLoadUpdate, applyServingLoadUpdate } from '../../src/client/load-plane';
import { producerKey } from '../../src/wire/producer-key';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { DataStatus } from '../../src/wire/enums';
import type { KvPoolLoadEntry, KvPoolLoadUpdate, PoolServingLoad, ServingLoadUpdate } from '../../src/wire/types';
import { producer, RELAY } from './fixtures';
import { changing, planeError } from './plane-steps';

const entry = (dc: bigint, used = 40n): KvPoolLoadEntry => ({ producer: producer(dc), kvUsedBlocks: used, totalKvBlocks: 100n, kvObservedRanks: 1, kvExpectedRanks: 1 });

const window = (seq: bigint, pools: KvPoolLoadEntry[]): KvPoolLoadUpdate => ({
  protocolVersion: RELAY_PROTOCOL_VERSION,
  relay: RELAY,
  windowSequence: seq,
  observedMs: 1000n,
  windowMs: 1000n,
  pools,
  contractMarker: RELAY_CONTRACT_MARKER,
});

const changed = changing(applyPoolLoadUpdate);

describe('pool load plane', () => {
  it('keeps the latest complete window by producer key and ignores older windows', () => {
    const first = changed(undefined, window(3n, [entry(1n), entry(2n, 7n)]));
    expect(first.pools.get(producerKey(producer(2n)))?.kvUsedBlocks).toBe(7n);
    expect(applyPoolLoadUpdate(first, window(3n, []))).toEqual({ kind: 'stale' });
    expect(applyPoolLoadUpdate(first, window(2n, []))).toEqual({ kind: 'stale' });
    expect(changed(first, window(4n, [])).pools.size).toBe(0);
  });

  it('quarantines an entry with an unsupported producer and keeps the rest', () => {
    const future = { ...entry(2n), producer: { ...producer(2n), poolId: { ...producer(2n).poolId!, identityVersion: 2 } } };
    const value = changed(undefined, window(1n, [entry(1n), future]));
    expect([...value.pools.keys()]).toEqual([producerKey(producer(1n))]);
    expect(value.quarantined.map((q) => q.index)).toEqual([1]);
  });

  it.each([
    ['MissingField', [{ ...entry(1n), producer: undefined }]],
    ['ZeroLayoutGeneration', [{ ...entry(1n), producer: producer(1n, 0n) }]],
    ['DuplicateLoadPool', [entry(1n), entry(1n, 3n)]],
  ])('drops the plane on %s', (reason, pools) => {
    expect(planeError(() => applyPoolLoadUpdate(undefined, window(1n, pools))).reason).toBe(reason);
  });

  it('rejects a relay identity change within the stream', () => {
    const first = changed(undefined, window(1n, []));
    expect(planeError(() => applyPoolLoadUpdate(first, { ...window(2n, []), relay: { ...RELAY, drtInstanceId: 99n } })).reason).toBe('RelayIdentityChanged');
  });
});

describe('serving load plane', () => {
  const pool = (dc: bigint, status: number = DataStatus.UNAVAILABLE): PoolServingLoad => ({
    producer: producer(dc),
    load: { tokens: {}, status, sourceObservedMs: 0n },
    deployment: { liveWorkers: 1n },
  });
  const update = (seq: bigint, pools: PoolServingLoad[]): ServingLoadUpdate => ({
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay: RELAY,
    windowSequence: seq,
    observedMs: 5n,
    windowMs: 10n,
    pools,
    models: [],
    contractMarker: RELAY_CONTRACT_MARKER,
  });

  it('quarantines an unknown data status and rejects a malformed view', () => {
    const step = applyServingLoadUpdate(undefined, update(1n, [pool(1n), pool(2n, 9)]));
    if (step.kind !== 'changed') throw new Error('expected a change');
    expect(step.value.pools.size).toBe(1);
    expect(step.value.quarantined).toHaveLength(1);
    // COMPLETE requires the scheduler gauges.
    expect(planeError(() => applyServingLoadUpdate(undefined, update(1n, [pool(1n, DataStatus.COMPLETE)]))).reason).toBe('LoadViewField');
  });
});
