// Periodic complete windows (pool load, serving load): window 0 at start, then one window every
// `windowMs` even when nothing changed. Each window is encoded once and the same bytes go to every
// subscriber. A subscriber first gets the current window, then every newer one; one that has not
// taken `fanoutCapacity` windows yet has lagged.
//
// A window nobody subscribes to is not built: its sequence and time are kept, and the window is
// built (its state sampled) when a subscriber comes. Sampling every pool's workers for no reader
// cost the main thread ~2 ms/s at 512 sources (BENCHMARKS.md).
import { RelayErrorReason } from '../wire/enums';
import { RelayError } from '../wire/errors';
import type { OpenStream } from './sink';
import type { PublicationCounters, StreamKind } from './stats';

export interface Window<T> {
  sequence: bigint;
  observedMs: bigint;
  windowMs: bigint;
  state: T;
}

export interface WindowPublisherOptions<T> {
  kind: Extract<StreamKind, 'load' | 'serving_load'>;
  /** Names the plane in errors, e.g. "pool load". */
  plane: string;
  sample: () => T;
  encode: (window: Window<T>) => Buffer;
  windowMs: number;
  fanoutCapacity: number;
  counters: PublicationCounters;
  /** A window could not be built: the plane stopped (the server treats this as fatal). */
  onFailure: (err: unknown) => void;
}

/** A window's place in the series, before its state is sampled. */
type WindowSlot = Pick<Window<unknown>, 'sequence' | 'observedMs'>;

export class WindowPublisher<T> {
  private current: { window: Window<T>; bytes: Buffer };
  /** The window due since the last one built, while nobody subscribed to it. */
  private due: WindowSlot | undefined;
  private readonly subscribers = new Set<OpenStream>();
  private timer: NodeJS.Timeout | undefined;
  private failure: unknown;

  constructor(private readonly options: WindowPublisherOptions<T>) {
    this.current = this.build({ sequence: 0n, observedMs: BigInt(Date.now()) });
    this.timer = setInterval(() => this.publish(), options.windowMs);
  }

  get latest(): Window<T> {
    if (this.due) this.catchUp();
    return this.current.window;
  }

  subscribe(stream: OpenStream): void {
    if (this.failure === undefined) {
      this.subscribers.add(stream);
      stream.defer(() => this.subscribers.delete(stream));
      // A window that cannot be built ends this stream with the others, as at a tick.
      if (this.due) this.catchUp();
    }
    if (this.failure !== undefined) {
      stream.end(new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, `${this.options.plane} publication stopped`));
      return;
    }
    stream.send(this.current.bytes, this.current.bytes.length);
  }

  /** Stops publishing; open streams end cleanly (shutdown). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.failure === undefined) for (const stream of [...this.subscribers]) stream.end();
  }

  private publish(): void {
    const slot = { sequence: (this.due ?? this.current.window).sequence + 1n, observedMs: BigInt(Date.now()) };
    if (this.subscribers.size === 0) {
      this.due = slot;
    } else {
      try {
        this.current = this.build(slot);
      } catch (err) {
        this.fail(err);
        return;
      }
    }
    if (this.options.kind === 'load') this.options.counters.loadUpdatesTotal += 1;
    for (const stream of [...this.subscribers]) {
      if (stream.frames >= this.options.fanoutCapacity) {
        this.options.counters.laggedTotal[this.options.kind] += 1;
        const message = `${this.options.plane} subscriber lagged by ${stream.frames + 1} complete windows; resubscribe`;
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
      stream.end(new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, `${this.options.plane} publication stopped`));
    }
    this.options.onFailure(err);
  }

  /** Builds the window due (a failure stops the plane, as at a tick). */
  private catchUp(): void {
    try {
      this.current = this.build(this.due!);
    } catch (err) {
      this.fail(err);
    }
    this.due = undefined;
  }

  private build({ sequence, observedMs }: WindowSlot): { window: Window<T>; bytes: Buffer } {
    const window: Window<T> = {
      sequence,
      observedMs,
      windowMs: BigInt(this.options.windowMs),
      state: this.options.sample(),
    };
    return { window, bytes: this.options.encode(window) };
  }
}
