/**
 * The ingest thread of an engine worker, in [0, threads): a stable hash of its id (Fibonacci
 * hashing, so ids that share low bits still spread), so all of a worker's ranks live on one thread
 * for as long as it is subscribed and their order is that thread's order.
 */
export function threadOf(workerId: bigint, threads: number): number {
  const mixed = BigInt.asUintN(64, workerId * 0x9e37_79b9_7f4a_7c15n) >> 32n;
  return Number((mixed * BigInt(threads)) >> 32n);
}
