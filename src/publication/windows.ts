// Periodic complete windows (pool load, serving load): window 0 at start, then one window every
// `windowMs` even when nothing changed. Each window is encoded once and the same bytes go to every
// subscriber. A subscriber first gets the current window, then every newer one; one that has not
// taken `fanoutCapacity` windows yet has lagged.
//
// Every window is sampled when due (its state as of then; a sample that fails stops the plane
// then), but encoded only once a subscriber takes it: a plane nobody reads encoded two windows a
// second for no one (BENCHMARKS.md, 2026-12-07 04:05).
//
// The windows tick on the process's shared timer of their interval (periodic.ts): the pool-load and
// serving-load planes and the once-a-second housekeeping wake an idle relay once a second, not three
// times. Window 1 comes at the first tick at least `windowMs` after window 0 (the spec's first tick is
// at start + window: a later one is a delayed tick, never an early one), then one a tick.
import { monotonicMs } from '../clock';
import { everyInterval } from '../periodic';
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

export class WindowPublisher<T> {
  /** The latest window; its bytes once encoded (a subscriber took it). */
  private current: { window: Window<T>; bytes: Buffer | undefined };
  private readonly subscribers = new Set<OpenStream>();
  /** Stops the ticks (undefined once stopped). */
  private stopTicks: (() => void) | undefined;
  private failure: unknown;

  constructor(private readonly options: WindowPublisherOptions<T>) {
    // Window 0 is encoded at once: a plane that cannot encode fails its start.
    const window = this.sample(0n);
    this.current = { window, bytes: options.encode(window) };
    const startedAt = monotonicMs();
    let first = true;
    this.stopTicks = everyInterval(options.windowMs, () => {
      if (first && monotonicMs() - startedAt < options.windowMs) return;
      first = false;
      this.publish();
    });
  }

  subscribe(stream: OpenStream): void {
    if (this.failure === undefined) {
      this.subscribers.add(stream);
      stream.defer(() => this.subscribers.delete(stream));
    }
    // A window that cannot be encoded ends this stream with the others, as at a tick.
    const bytes = this.failure === undefined ? this.encoded() : undefined;
    if (bytes === undefined) {
      stream.end(new RelayError(RelayErrorReason.PUBLICATION_UNAVAILABLE, `${this.options.plane} publication stopped`));
      return;
    }
    stream.send(bytes, bytes.length);
  }

  /** Stops publishing; open streams end cleanly (shutdown). */
  stop(): void {
    this.stopTicks?.();
    this.stopTicks = undefined;
    if (this.failure === undefined) for (const stream of [...this.subscribers]) stream.end();
  }

  private publish(): void {
    try {
      this.current = { window: this.sample(this.current.window.sequence + 1n), bytes: undefined };
    } catch (err) {
      this.fail(err);
      return;
    }
    const bytes = this.subscribers.size > 0 ? this.encoded() : undefined;
    if (this.failure !== undefined) return;
    if (this.options.kind === 'load') this.options.counters.loadUpdatesTotal += 1;
    if (bytes === undefined) return;
    for (const stream of [...this.subscribers]) {
      if (stream.frames >= this.options.fanoutCapacity) {
        this.options.counters.laggedTotal[this.options.kind] += 1;
        const message = `${this.options.plane} subscriber lagged by ${stream.frames + 1} complete windows; resubscribe`;
        stream.end(new RelayError(RelayErrorReason.SUBSCRIBER_LAGGED, message));
        continue;
      }
      stream.send(bytes, bytes.length);
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

  /** The current window's bytes, encoded at its first reader; undefined when encoding failed (the plane stopped). */
  private encoded(): Buffer | undefined {
    try {
      this.current.bytes ??= this.options.encode(this.current.window);
    } catch (err) {
      this.fail(err);
    }
    return this.current.bytes;
  }

  private sample(sequence: bigint): Window<T> {
    return {
      sequence,
      observedMs: BigInt(Date.now()),
      windowMs: BigInt(this.options.windowMs),
      state: this.options.sample(),
    };
  }
}
