// vLLM replay client: a DEALER (a REQ would accept only one reply) that asks the engine's ROUTER
// for every buffered batch from a start sequence (engine-inputs.md §1.2). One socket per request,
// so a late reply to an abandoned request can never be mistaken for the next one's.
import { setImmediate as nextTurn } from 'timers/promises';
import { Dealer } from 'zeromq';
import { INGEST_MESSAGES_PER_TURN, INGEST_REPLAY_RECEIVE_HWM } from '../config/defaults';
import { parseReplayReply, replayRequest } from './frames';
import type { ReplayHandle } from './stream';
import { ingestContext } from './zmq-context';

export interface ReplayCallbacks {
  reply(handle: ReplayHandle, sequence: bigint, payload: Buffer): void;
  /** complete = the end marker arrived; false = timed out or the socket failed. */
  end(handle: ReplayHandle, complete: boolean): void;
  malformed(err: Error): void;
}

export interface ReplayLimits {
  /** A replay that stays silent this long is abandoned. */
  idleTimeoutMs: number;
  /** A reply larger than this drops the connection (the replay then times out, incomplete). */
  maxMessageBytes: number;
  /** While this returns a promise, replies are not read until it settles (ingest thread back-pressure). */
  paused?: () => Promise<void> | undefined;
}

export function requestReplay(endpoint: string, topic: string, from: bigint, limits: ReplayLimits, cb: ReplayCallbacks): ReplayHandle {
  const { idleTimeoutMs, maxMessageBytes } = limits;
  const dealer = new Dealer({
    context: ingestContext(),
    linger: 0,
    receiveTimeout: idleTimeoutMs,
    sendTimeout: idleTimeoutMs,
    receiveHighWaterMark: INGEST_REPLAY_RECEIVE_HWM,
    maxMessageSize: maxMessageBytes,
  });
  let done = false;
  const handle: ReplayHandle = {
    cancel() {
      done = true;
      if (!dealer.closed) dealer.close();
    },
  };
  const finish = (complete: boolean): void => {
    if (done) return;
    handle.cancel();
    cb.end(handle, complete);
  };
  const run = async (): Promise<void> => {
    dealer.connect(endpoint);
    await dealer.send(replayRequest(from));
    let handled = 0;
    while (!done) {
      // As on the live socket: a long replay must not hold the event loop (subscriber.ts).
      if (++handled % INGEST_MESSAGES_PER_TURN === 0) await nextTurn();
      const resumed = limits.paused?.();
      if (resumed) await resumed;
      if (done) return;
      const frames = await dealer.receive();
      if (done) return;
      let reply;
      try {
        reply = parseReplayReply(frames);
      } catch (err) {
        cb.malformed(err as Error);
        continue;
      }
      if (reply.end) return finish(true);
      // The live subscription's prefix filter, applied where the reply layout carries the topic.
      if (reply.topic !== null && !reply.topic.startsWith(topic)) continue;
      cb.reply(handle, reply.sequence, reply.payload);
    }
  };
  run().catch(() => finish(false));
  return handle;
}
