// Sends the latest complete value of a watched state (catalog, readiness): one message in flight at
// a time, and any number of changes or heartbeat ticks while it is in flight coalesce into one
// send of the value current when the client has taken the previous message (latest wins).
import { RelayErrorReason } from '../wire/enums';
import { RelayError } from '../wire/errors';
import type { OpenStream } from './sink';

export class LatestWriter {
  private inFlight = false;
  private pending = false;

  constructor(
    private readonly stream: OpenStream,
    private readonly encodeCurrent: () => Buffer,
  ) {}

  request(): void {
    if (this.inFlight) {
      this.pending = true;
      return;
    }
    let bytes: Buffer;
    try {
      bytes = this.encodeCurrent();
    } catch (err) {
      // A state that cannot be encoded is a relay bug; it ends this stream, not the process.
      this.stream.end(new RelayError(RelayErrorReason.INTERNAL, `cannot publish the current state: ${String(err)}`));
      return;
    }
    this.inFlight = true;
    this.stream.sendUncounted(bytes, () => {
      this.inFlight = false;
      if (this.pending) {
        this.pending = false;
        this.request();
      }
    });
  }
}

/** A fixed-cadence re-send of the current value, first tick one interval after open. */
export function repeatEvery(stream: OpenStream, intervalMs: number, tick: () => void): void {
  if (intervalMs <= 0) return;
  const timer = setInterval(tick, intervalMs);
  stream.defer(() => clearInterval(timer));
}
