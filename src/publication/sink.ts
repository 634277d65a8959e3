// What the publication layer needs from a transport stream: hand over encoded messages, learn when
// each one was taken (the transport's backpressure), end the stream, and hear when it goes away.
import type { RelayError } from '../wire/errors';

export interface FrameSink {
  /** Hands one encoded response message to the transport; `taken` fires once it has been sent on. */
  write(frame: Buffer, taken: () => void): void;
  /** Ends the stream cleanly (EOF, status OK) or with a relay error; only the first call counts. */
  end(error?: RelayError): void;
  /** `listener` fires once when the stream goes away for any reason (end, cancel, disconnect). */
  onClosed(listener: () => void): void;
}

/**
 * One open response stream: its sink, the frames it has handed over but the client has not taken
 * yet (counted only when the caller accounts them), and the cleanups that run when it closes.
 */
export class OpenStream {
  private pendingFrames = 0;
  private pendingBytes = 0;
  private readonly cleanups: Array<() => void> = [];
  private isClosed = false;

  constructor(private readonly sink: FrameSink) {
    sink.onClosed(() => this.close());
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Accounted frames handed to the transport and not taken yet. */
  get frames(): number {
    return this.pendingFrames;
  }

  get bytes(): number {
    return this.pendingBytes;
  }

  /** Sends `frame`; `accountedBytes` (if given) counts it against the subscriber's queue. */
  send(frame: Buffer, accountedBytes?: number, taken?: () => void): void {
    if (this.isClosed) return;
    const accounted = accountedBytes !== undefined;
    if (accounted) {
      this.pendingFrames += 1;
      this.pendingBytes += accountedBytes;
    }
    this.sink.write(frame, () => {
      if (accounted) {
        this.pendingFrames -= 1;
        this.pendingBytes -= accountedBytes;
      }
      if (!this.isClosed) taken?.();
    });
  }

  /** Runs `cleanup` when the stream closes (at once if it already has). */
  defer(cleanup: () => void): void {
    if (this.isClosed) cleanup();
    else this.cleanups.push(cleanup);
  }

  end(error?: RelayError): void {
    if (this.isClosed) return;
    this.close();
    this.sink.end(error);
  }

  private close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const cleanup of this.cleanups.splice(0).reverse()) cleanup();
  }
}
