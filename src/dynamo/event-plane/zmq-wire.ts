// The ZMQ event plane's message: [topic, publisher_id u64 BE, sequence u64 BE, frame] (Dynamo's
// lib/runtime/src/transports/event_plane/zmq_transport.rs, `decode_multipart`, read at ai-dynamo/dynamo
// 0e8f300946240739dd57dda47f7a2f331c0b2a36). Dynamo's subscriber drops, with a warning, a message of
// another frame count, whose topic frame is not exactly its subscription's topic (the SUB's filter is
// only a prefix: `kv-events-x` passes a `kv-events` subscription) or whose id frames are not 8 bytes;
// the envelope inside the frame must then name the same publisher and sequence (ValidatedZmqSource,
// an IdentityMismatch otherwise). This file checks the frames; the envelope is compared where it is
// decoded (channel.ts for KV events, active-load.ts for kv_metrics).

/** Why the message's frames are not an event-plane message of `topic`, or undefined. */
export function zmqWireError(frames: readonly Buffer[], topic: Buffer): string | undefined {
  if (frames.length !== 4) return `${frames.length} frames, not 4`;
  if (!frames[0].equals(topic)) return `topic frame ${JSON.stringify(frames[0].subarray(0, 64).toString('latin1'))}, not ${JSON.stringify(topic.toString('latin1'))}`;
  if (frames[1].length !== 8) return `publisher_id frame of ${frames[1].length} bytes, not 8`;
  if (frames[2].length !== 8) return `sequence frame of ${frames[2].length} bytes, not 8`;
  return undefined;
}

/** The high and low u32 words of an 8-byte big-endian frame (the decoder's records hold u64s so). */
export function u32Hi(frame: Uint8Array): number {
  return ((frame[0] << 24) | (frame[1] << 16) | (frame[2] << 8) | frame[3]) >>> 0;
}

export function u32Lo(frame: Uint8Array): number {
  return ((frame[4] << 24) | (frame[5] << 16) | (frame[6] << 8) | frame[7]) >>> 0;
}
