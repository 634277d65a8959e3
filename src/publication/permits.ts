// Counting permits for admission (non-blocking) and for snapshot encoding (blocking, cancellable).

/** Gives a permit back; calling it more than once is harmless. */
export type Release = () => void;

/** A try-acquire semaphore: admission never waits, a full set of permits is a resource limit. */
export class Permits {
  private used = 0;

  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.used;
  }

  tryAcquire(): Release | undefined {
    if (this.used >= this.limit) return undefined;
    this.used += 1;
    return once(() => {
      this.used -= 1;
    });
  }
}

/** A FIFO semaphore whose waiters can give up (shutdown, retirement) through an AbortSignal. */
export class QueuedPermits {
  private used = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly limit: number) {}

  acquire(signal: AbortSignal): Promise<Release> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.used < this.limit) {
      this.used += 1;
      return Promise.resolve(this.releaser());
    }
    return new Promise<Release>((resolve, reject) => {
      const grant = (): void => {
        signal.removeEventListener('abort', abandon);
        resolve(this.releaser());
      };
      const abandon = (): void => {
        const at = this.waiters.indexOf(grant);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', abandon, { once: true });
      this.waiters.push(grant);
    });
  }

  private releaser(): Release {
    return once(() => {
      const next = this.waiters.shift();
      // The permit passes straight to the next waiter, so `used` only drops when nobody waits.
      if (next) next();
      else this.used -= 1;
    });
  }
}

function once(fn: () => void): Release {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
