// An HTTP GET bounded in time, for the relay's probes of engine endpoints (health, metrics). The
// deadline is a timer of our own, not AbortSignal.timeout(): Node 20 holds a timeout signal weakly,
// and inside AbortSignal.any() a garbage collection can take it before it fires, so an endpoint that
// accepts and never answers held the probe for good (test/topology/health.test.ts).

/**
 * Fetches `url` and hands the response to `use`; both are aborted once `ms` pass (a body `use` is
 * still reading included) or `stop` aborts. Rejects as fetch does (no response, aborted).
 */
export async function fetchWithDeadline<T>(url: string, ms: number, stop: AbortSignal, use: (res: Response) => Promise<T> | T): Promise<T> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), ms);
  try {
    return await use(await fetch(url, { signal: AbortSignal.any([stop, deadline.signal]) }));
  } finally {
    clearTimeout(timer);
  }
}
