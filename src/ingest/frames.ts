// ZMQ framing of vLLM's KV-event publisher (engine-inputs.md §1.1–§1.2): live messages are
// [topic, seq (8 bytes big-endian), payload]; replay replies come after the ROUTER's empty
// delimiter as [seq, payload] (before vLLM PR #45177, and SGLang) or [topic, seq, payload] (after),
// ending with seq = END_SEQ.
import { MAX_U64 } from '../config/limits';
import { DecodeError } from './errors';

export const SEQUENCE_BYTES = 8;
/** (-1).to_bytes(8, "big", signed=True). */
export const END_SEQ = MAX_U64;

export interface LiveMessage {
  topic: string;
  sequence: bigint;
  payload: Buffer;
}

/** topic is null in the 2-frame layout, which has no topic frame. */
export type ReplayReply = { end: true } | { end: false; topic: string | null; sequence: bigint; payload: Buffer };

export function encodeSequence(sequence: bigint): Buffer {
  const buf = Buffer.alloc(SEQUENCE_BYTES);
  buf.writeBigUInt64BE(BigInt.asUintN(64, sequence));
  return buf;
}

export function decodeSequence(frame: Buffer): bigint {
  if (frame.length !== SEQUENCE_BYTES) throw sequenceLengthError(frame.length);
  return frame.readBigUInt64BE(0);
}

export function sequenceLengthError(bytes: number): DecodeError {
  return new DecodeError(`sequence frame: ${bytes} bytes, expected ${SEQUENCE_BYTES}`);
}

export function frameCountError(frames: number): DecodeError {
  return new DecodeError(`message: ${frames} frames, expected 3`);
}

export function parseLiveMessage(frames: Buffer[]): LiveMessage {
  const sequence = liveSequence(frames);
  return { topic: frames[0].toString('utf8'), sequence, payload: frames[2] };
}

function liveSequence(frames: Buffer[]): bigint {
  if (frames.length !== 3) throw frameCountError(frames.length);
  return decodeSequence(frames[1]);
}

/** A replay reply as a DEALER receives it: [b"", seq, payload] or [b"", topic, seq, payload]. */
export function parseReplayReply(frames: Buffer[]): ReplayReply {
  const body = frames.length > 0 && frames[0].length === 0 ? frames.slice(1) : frames;
  if (body.length !== 2 && body.length !== 3) throw new DecodeError(`replay reply: ${frames.length} frames`);
  const [seqFrame, payload] = body.slice(-2);
  const sequence = decodeSequence(seqFrame);
  // vLLM and SGLang end with END_SEQ; TRT-LLM's documented layout ends with an empty payload. A
  // batch is never empty, so either marks the end.
  if (sequence === END_SEQ || payload.length === 0) return { end: true };
  return { end: false, topic: body.length === 3 ? body[0].toString('utf8') : null, sequence, payload };
}

/** The replay request: start sequence, 8 bytes big-endian, after an empty delimiter (DEALER). */
export function replayRequest(start: bigint): Buffer[] {
  return [Buffer.alloc(0), encodeSequence(start)];
}
