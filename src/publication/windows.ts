// Periodic complete windows (pool load, serving load): window 0 at start, then one window every
// `windowMs` even when nothing changed. Each window is encoded once and the same bytes go to every
// subscriber. A subscriber first gets the current window, then every newer one; one that has not
// taken `fanoutCapacity` windows yet has lagged.
import { RelayErrorReason } from '../wire/enums';
import { RelayError } from '../wire/errors';
import type { OpenStream } from './sink';

export interface Window<T> {
  sequence: bigint;
  observedMs: bigint;
  windowMs: bigint;
  state: T;
}

export class WindowPublisher<T> {
  private current: { window: Window<T>; bytes: Buffer };
  private readonly subscribers = new Set<OpenStream>();
  private timer: NodeJS.Timeout | undefined;
  /** Why the plane stopped, if it failed (the server's supervisor reads it). */
  failure: unknown;

  constructor(
    /** Names the plane in errors, e.g. "pool load". */
    private readonly plane: string,
    private readonly sample: () => T,
    private readonly encode: (window: Window<T>) => Buffer,
    private readonly windowMs: number,
    private readonly fanoutCapacity: number,
  ) {
    this.current = this.build(0n);
    this.timer = setInterval(() => this.publish(), windowMs);
  }

  get latest(): Window<T> {
    return this.current.window;
  }

  subscribe(stream: OpenStream): void {
    if (this.failure !== undefined) {
      stream.end(new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, `${this.plane} publication stopped`));
      return;
    }
    this.subscribers.add(stream);
    stream.defer(() => this.subscribers.delete(stream));
    stream.send(this.current.bytes, this.current.bytes.length);
  }

  /** Stops publishing; open streams end cleanly (shutdown). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.failure === undefined) for (const stream of [...this.subscribers]) stream.end();
  }

  private publish(): void {
    try {
      this.current = this.build(this.current.window.sequence + 1n);
    } catch (err) {
      this.fail(err);
      return;
    }
    for (const stream of [...this.subscribers]) {
      if (stream.frames >= this.fanoutCapacity) {
        const message = `${this.plane} subscriber lagged by ${stream.frames + 1} complete windows; resubscribe`;
        stream.end(new RelayError(RelayErrorReason.SUBSCRIBER_LAGGED, message));
        continue;
      }
      stream.send(this.current.bytes, this.current.bytes.length);
    }
  }

  // A window that cannot be built stops the plane: subscribers learn it and must resubscribe.
  private fail(err: unknown): void {
    this.failure = err;
    this.stop();
    for (const stream of [...this.subscribers]) {
      stream.end(new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, `${this.plane} publication stopped`));
    }
  }

  private build(sequence: bigint): { window: Window<T>; bytes: Buffer } {
    const window: Window<T> = {
      sequence,
      observedMs: BigInt(Date.now()),
      windowMs: BigInt(this.windowMs),
      state: this.sample(),
    };
    return { window, bytes: this.encode(window) };
  }
}
