// A grpc-js server stream as a publication FrameSink: frames are written as pre-encoded bytes,
// `taken` is grpc-js's write callback (the message left the call's buffers), and relay errors end
// the call with their status code and reason trailer (trailers-only before the first message).
import type * as grpc from '@grpc/grpc-js';
import type { FrameSink } from '../publication/sink';
import type { RelayError } from '../wire/errors';

export function grpcSink(call: grpc.ServerWritableStream<unknown, unknown>): FrameSink {
  let ended = false;
  const closedListeners: Array<() => void> = [];
  const closed = (): void => {
    ended = true;
    for (const listener of closedListeners.splice(0)) listener();
  };
  call.once('cancelled', closed);
  call.once('close', closed);
  // One write callback for the stream, not a closure per message; grpc-js calls write callbacks
  // in write order.
  let taken: () => void = () => undefined;
  const written = (err?: Error | null): void => {
    if (!err) taken();
  };
  return {
    write(frame: Buffer): void {
      if (!ended) call.write(frame, written);
    },
    onTaken(listener: () => void): void {
      taken = listener;
    },
    end(error?: RelayError): void {
      if (ended) return;
      ended = true;
      if (error) call.emit('error', error.toGrpcStatus());
      else call.end();
      closed();
    },
    onClosed(listener: () => void): void {
      if (ended) listener();
      else closedListeners.push(listener);
    },
  };
}
