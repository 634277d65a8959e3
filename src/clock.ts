// The system's monotonic clock in milliseconds, sub-millisecond: the same on every thread of the
// process, so a time taken on an ingest thread can be subtracted from one taken on the main thread,
// and no wall-clock step (NTP) between the two readings skews the difference.
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
