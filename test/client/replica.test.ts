// The pool replica state machine over real CBI1 frames from the native codec.
import { PoolReplica, ReplicaFault, type ReplicaFaultReason } from '../../src/client/replica';
import { encodeDelta, encodeSnapshotChunks } from '../../src/native';
import { RELAY_CONTRACT_MARKER, RELAY_PROTOCOL_VERSION } from '../../src/wire/constants';
import { FilterUpdateKind } from '../../src/wire/enums';
import type { FilterUpdate, ProducerIdentity } from '../../src/wire/types';
import { producer, RELAY } from './fixtures';

const PRODUCER = producer(7n, 1n, 1n << 20n); // 2 snapshot chunks
const FORMAT = PRODUCER.ckfFormat!;
const BUCKETS = Number(FORMAT.bucketCount);

function frame(kind: number, base: bigint, seq: bigint, payload: Uint8Array, p: ProducerIdentity = PRODUCER): FilterUpdate {
  return {
    protocolVersion: RELAY_PROTOCOL_VERSION,
    relay: RELAY,
    producer: p,
    baseSequence: base,
    sequence: seq,
    sendTsUs: 0n,
    kind,
    payload,
    contractMarker: RELAY_CONTRACT_MARKER,
  };
}

function snapshotFrames(seq: bigint, words: BigUint64Array, dcId = 7n): FilterUpdate[] {
  return encodeSnapshotChunks(FORMAT, dcId, seq, words).map((c) => frame(FilterUpdateKind.SNAPSHOT_CHUNK, seq, seq, c));
}

function delta(base: bigint, seq: bigint, images: Array<[number, bigint]>, dcId = 7n): FilterUpdate {
  const payload = encodeDelta(FORMAT, dcId, base, seq, Uint32Array.from(images.map((i) => i[0])), BigUint64Array.from(images.map((i) => i[1])));
  return frame(FilterUpdateKind.DELTA, base, seq, payload);
}

function installed(seq = 5n): PoolReplica {
  const words = new BigUint64Array(BUCKETS);
  words[0] = 0x0001_abcd_0000_1234n;
  words[BUCKETS - 1] = 33n;
  const replica = new PoolReplica(PRODUCER);
  const frames = snapshotFrames(seq, words);
  expect(replica.apply(frames[0])).toEqual({ kind: 'chunk' });
  expect(replica.apply(frames[1])).toEqual({ kind: 'installed', sequence: seq });
  return replica;
}

function faultOf(fn: () => unknown): ReplicaFaultReason {
  try {
    fn();
  } catch (err) {
    if (err instanceof ReplicaFault) return err.reason;
    throw err;
  }
  throw new Error('expected a ReplicaFault');
}

describe('PoolReplica', () => {
  it('installs only after the complete chunked snapshot, then applies contiguous deltas', () => {
    const replica = installed(5n);
    expect(replica.words![0]).toBe(0x0001_abcd_0000_1234n);
    expect(replica.stats().filledSlots).toBe(4); // 3 slots in word 0, 1 in the last word
    expect(replica.holds(0xabcd, 0, 1)).toBe(true);
    expect(replica.holds(0xabce, 0, 1)).toBe(false);
    expect(replica.apply(delta(5n, 6n, [[3, 0x0009_0000_0000_0000n], [0, 0n]]))).toEqual({
      kind: 'delta',
      baseSequence: 5n,
      sequence: 6n,
      imageCount: 2,
    });
    expect(replica.sequence).toBe(6n);
    expect(replica.stats().filledSlots).toBe(2);
    expect(replica.apply(frame(FilterUpdateKind.HEARTBEAT, 6n, 6n, new Uint8Array()))).toEqual({ kind: 'heartbeat', sequence: 6n });
    expect(replica.stats().deltasPerSecond).toBeGreaterThan(0);
  });

  it('ignores a stale delta and rejects a gap, a jump and a malformed delta', () => {
    const replica = installed(5n);
    expect(replica.apply(delta(4n, 5n, [[1, 1n]]))).toEqual({ kind: 'stale' });
    expect(faultOf(() => installed(5n).apply(delta(6n, 7n, [[1, 1n]])))).toBe('gap');
    expect(faultOf(() => installed(5n).apply(delta(5n, 7n, [[1, 1n]])))).toBe('nonContiguous');
    expect(faultOf(() => installed(5n).apply(delta(5n, 6n, [])))).toBe('emptyDelta');
    expect(faultOf(() => installed(5n).apply(delta(5n, 6n, [[1, 1n], [1, 2n]])))).toBe('duplicateImage');
  });

  it('detects identity drift and envelope mismatches between frame and stream', () => {
    expect(faultOf(() => installed().apply(delta(5n, 6n, [[1, 1n]], 8n)))).toBe('identityDrift');
    const other = producer(7n, 2n, 1n << 20n);
    expect(faultOf(() => installed().apply({ ...delta(5n, 6n, [[1, 1n]]), producer: other }))).toBe('producerChanged');
    expect(faultOf(() => installed().apply({ ...delta(5n, 6n, [[1, 1n]]), relay: { ...RELAY, relayIncarnation: 1n } }))).toBe('relayIdentity');
    expect(faultOf(() => installed().apply({ ...delta(5n, 6n, [[1, 1n]]), contractMarker: 1 }))).toBe('envelope');
    // The envelope sequence must be the CBI1 epoch.
    expect(faultOf(() => installed().apply({ ...delta(5n, 6n, [[1, 1n]]), sequence: 7n, baseSequence: 6n }))).toBe('epochMismatch');
  });

  it('rejects frames from a Relay other than the one whose catalog listed the pool', () => {
    const replica = new PoolReplica(PRODUCER, { ...RELAY, drtInstanceId: 12n });
    expect(faultOf(() => replica.apply(snapshotFrames(1n, new BigUint64Array(BUCKETS))[0]))).toBe('relayIdentity');
  });

  it('rejects a corrupted frame with the codec error code', () => {
    const bad = delta(5n, 6n, [[1, 1n]]);
    const payload = Uint8Array.from(bad.payload);
    payload[payload.length - 1] ^= 0xff;
    let fault: ReplicaFault | undefined;
    try {
      installed().apply({ ...bad, payload });
    } catch (err) {
      fault = err as ReplicaFault;
    }
    expect(fault?.reason).toBe('malformedFrame');
    expect(fault?.code).toBe('Checksum');
  });

  it('rejects deltas and heartbeats before the snapshot, and out-of-order chunks', () => {
    const words = new BigUint64Array(BUCKETS);
    const frames = snapshotFrames(3n, words);
    expect(faultOf(() => new PoolReplica(PRODUCER).apply(delta(3n, 4n, [[1, 1n]])))).toBe('deltaBeforeSnapshot');
    expect(faultOf(() => new PoolReplica(PRODUCER).apply(frame(FilterUpdateKind.HEARTBEAT, 0n, 0n, new Uint8Array())))).toBe('heartbeatMismatch');
    expect(faultOf(() => new PoolReplica(PRODUCER).apply(frames[1]))).toBe('chunkSequence');
    expect(faultOf(() => new PoolReplica(PRODUCER).apply({ ...frames[0], baseSequence: 2n }))).toBe('chunkSequence');
    expect(faultOf(() => new PoolReplica(PRODUCER).apply(snapshotFrames(3n, words, 9n)[0]))).toBe('identityDrift');
  });

  it('rejects heartbeat mismatches, unknown kinds and a new snapshot on a ready replica', () => {
    expect(faultOf(() => installed(5n).apply(frame(FilterUpdateKind.HEARTBEAT, 4n, 4n, new Uint8Array())))).toBe('heartbeatMismatch');
    expect(faultOf(() => installed(5n).apply(frame(FilterUpdateKind.HEARTBEAT, 5n, 5n, new Uint8Array(1))))).toBe('heartbeatMismatch');
    expect(faultOf(() => installed(5n).apply(frame(FilterUpdateKind.UNSPECIFIED, 5n, 5n, new Uint8Array())))).toBe('unknownKind');
    expect(faultOf(() => installed(5n).apply(frame(9, 5n, 5n, new Uint8Array())))).toBe('unknownKind');
    expect(faultOf(() => installed(5n).apply(snapshotFrames(6n, new BigUint64Array(BUCKETS))[0]))).toBe('snapshotWhileReady');
  });
});
