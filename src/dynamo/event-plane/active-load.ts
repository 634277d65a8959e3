// A worker's ActiveLoad on Dynamo's event plane (identity-topology-load.md §5.3): a MessagePack
// EventEnvelope whose payload is rmp_serde's named map {worker_id, dp_rank (default 0),
// active_decode_blocks?, active_prefill_tokens?, kv_used_blocks?, ...}. A few messages per rank
// per second, so decoded in JavaScript (msgpackr); 64-bit integers stay exact as bigints.
import { Unpackr } from 'msgpackr';

const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });

export interface ActiveLoadReport {
  /** The envelope's publisher_id, sequence and topic (a ZMQ message's frames 0-2 must agree with them). */
  publisherId?: bigint;
  sequence?: bigint;
  topic?: string;
  workerId: bigint;
  dpRank: number;
  /** Undefined in a router's report (advisory; the relay ignores it for pool load). */
  kvUsedBlocks?: number;
}

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);
const u64 = (v: unknown): bigint | undefined => (typeof v === 'bigint' && v >= 0n ? v : typeof v === 'number' && Number.isInteger(v) && v >= 0 ? BigInt(v) : undefined);

/** The report, or why the message is not one. */
export function decodeActiveLoad(message: Uint8Array): ActiveLoadReport | string {
  let envelope: unknown;
  let load: unknown;
  try {
    envelope = unpackr.unpack(message);
    if (!isMap(envelope) || !(envelope.payload instanceof Uint8Array)) return 'not an event-plane envelope with a payload';
    load = unpackr.unpack(envelope.payload);
  } catch (err) {
    return `msgpack: ${(err as Error).message}`;
  }
  if (!isMap(load)) return 'ActiveLoad: not a map';
  const publisherId = u64((envelope as Record<string, unknown>).publisher_id);
  const sequence = u64((envelope as Record<string, unknown>).sequence);
  const topic = typeof envelope.topic === 'string' ? envelope.topic : undefined;
  const workerId = u64(load.worker_id);
  const dpRank = load.dp_rank === undefined ? 0n : u64(load.dp_rank);
  if (workerId === undefined) return 'ActiveLoad.worker_id: not a u64';
  if (dpRank === undefined || dpRank > 0xffff_ffffn) return 'ActiveLoad.dp_rank: not a u32';
  const used = load.kv_used_blocks;
  if (used === undefined || used === null) return { publisherId, sequence, topic, workerId, dpRank: Number(dpRank) };
  const blocks = u64(used);
  if (blocks === undefined) return 'ActiveLoad.kv_used_blocks: not a u64';
  return { publisherId, sequence, topic, workerId, dpRank: Number(dpRank), kvUsedBlocks: Number(blocks) };
}

/** The ZMQ plane's frame around an envelope: version (1), then the envelope's length as u32 BE (frame.rs). */
const FRAME_VERSION = 1;
const FRAME_HEADER_BYTES = 5;
/** A kv_metrics message is a few dozen bytes; a larger one from a peer is refused by the socket unread. */
export const MAX_ACTIVE_LOAD_MESSAGE_BYTES = 64 * 1024;

/**
 * The report in a ZMQ plane message `[topic, publisher_id, sequence, frame]` (topic and frame lengths
 * checked by zmq-wire.ts), or why not: the frame's envelope must name the topic, publisher and sequence
 * the message's frames 0-2 do, as Dynamo's direct-ZMQ subscriber requires (an IdentityMismatch
 * otherwise: lib/llm/src/direct_zmq_sub_pool.rs). Every failure here is one of Dynamo's kv_metrics
 * faults (envelope decode, identity mismatch, payload decode: metrics_subscriber.rs `fault_for_event`).
 */
export function decodeZmqActiveLoad(topic: string, publisherId: bigint, sequence: bigint, frame: Uint8Array): ActiveLoadReport | string {
  if (frame.length < FRAME_HEADER_BYTES || frame[0] !== FRAME_VERSION) return `not a version ${FRAME_VERSION} event-plane frame`;
  const length = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint32(1);
  if (length !== frame.length - FRAME_HEADER_BYTES) return `frame length ${length} for ${frame.length - FRAME_HEADER_BYTES} bytes`;
  const load = decodeActiveLoad(frame.subarray(FRAME_HEADER_BYTES));
  if (typeof load === 'string') return load;
  if (load.publisherId !== publisherId || load.sequence !== sequence || load.topic !== topic) {
    return `frames name topic ${topic} publisher ${publisherId} sequence ${sequence}, its envelope topic ${load.topic ?? 'none'} publisher ${load.publisherId ?? 'none'} sequence ${load.sequence ?? 'none'}`;
  }
  return load;
}
