// The relay's wall clock in milliseconds since the Unix epoch, sub-millisecond. Unlike
// performance.now() it is comparable across threads (each worker thread has its own time origin), so
// a time taken on an ingest thread can be subtracted from one taken on the main thread.
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}
