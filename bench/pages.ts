// Background page population (native/page_populator.h) against the rest of the process: how long
// another thread's mmap + write + munmap of 256 KiB (what V8's heap, malloc's large blocks and ZMQ do
// on the relay's main, ingest and apply threads) takes while a fresh table's pages are faulted in,
// against the same calls with the populating thread idle, in the same call. Faulting with
// madvise(MADV_POPULATE_WRITE) held the address-space lock and kept such calls waiting 15-50 ms on
// the project's VM; touching the pages does not (goal: the busy max within a few ms).
import { benchPopulatorContention } from '../test/support/native-testing';
import type { BenchResult } from './support/result';

/** A table's successor at ~20 M entries of the owner table; large enough to take a few hundred ms. */
const MIB = Number(process.env.PAGES_MIB ?? 512);

export async function run(): Promise<BenchResult[]> {
  const r = benchPopulatorContention(MIB);
  const note = `${r.busy.count} calls while ${MIB} MiB were populated in ${r.populateMs.toFixed(1)} ms (${(r.populateMs / MIB).toFixed(3)} ms/MiB; fresh memory on a VM is backed by the host at first touch), ${r.idle.count} idle`;
  return [
    {
      name: `slowest mmap + write + munmap of 256 KiB on another thread while ${MIB} MiB are populated in the background`,
      value: r.busy.maxMs,
      unit: 'ms',
      baseline: { name: 'slowest of the same calls with the populating thread idle', value: r.idle.maxMs },
      ratio: r.busy.maxMs / r.idle.maxMs,
      note: `mean ${r.busy.meanMs.toFixed(3)} ms against ${r.idle.meanMs.toFixed(3)} ms idle; ${note}`,
    },
  ];
}
