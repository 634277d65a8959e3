// What the publication layer needs from a transport stream: hand over encoded messages, learn when
// each one was taken (the transport's backpressure), end the stream, and hear when it goes away.
import type { RelayError } from '../wire/errors';

export interface FrameSink {
  /** Hands one encoded response message to the transport. */
  write(frame: Buffer): void;
  /**
   * `listener` fires once per message written, in write order, when the transport has sent it on
   * (its backpressure). One listener per stream: nothing is allocated per message and subscriber.
   */
  onTaken(listener: () => void): void;
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
  /**
   * Per message handed over and not taken yet, in order: its accounted bytes, or what to call
   * when it is taken (undefined: neither). The sink takes messages in write order.
   */
  private readonly inFlight: Array<number | (() => void) | undefined> = [];
  private readonly cleanups: Array<() => void> = [];
  private isClosed = false;

  constructor(private readonly sink: FrameSink) {
    sink.onClosed(() => this.close());
    sink.onTaken(() => this.taken());
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

  /** Sends `frame`, counted against the subscriber's queue as `accountedBytes` until taken. */
  send(frame: Buffer, accountedBytes: number): void {
    if (this.isClosed) return;
    this.pendingFrames += 1;
    this.pendingBytes += accountedBytes;
    this.inFlight.push(accountedBytes);
    this.sink.write(frame);
  }

  /** Sends `frame` outside the queue bounds; `taken` (if given) fires once the client took it. */
  sendUncounted(frame: Buffer, taken?: () => void): void {
    if (this.isClosed) return;
    this.inFlight.push(taken);
    this.sink.write(frame);
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

  private taken(): void {
    const entry = this.inFlight.shift();
    if (typeof entry === 'number') {
      this.pendingFrames -= 1;
      this.pendingBytes -= entry;
    } else if (entry !== undefined && !this.isClosed) {
      entry();
    }
  }

  private close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const cleanup of this.cleanups.splice(0).reverse()) cleanup();
  }
}
