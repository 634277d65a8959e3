// Background page population (native/core/page_populator.h) against the rest of the process: how long
// another thread's mmap + write + munmap of 256 KiB (what V8's heap, malloc's large blocks and ZMQ do
// on the relay's main, ingest and apply threads) takes while a fresh table's pages are faulted in,
// against the same calls with the populating thread idle, in the same call. Faulting with
// madvise(MADV_POPULATE_WRITE) held the address-space lock and kept such calls waiting 15-50 ms on
// the project's VM; touching the pages does not (goal: the busy max within a few ms).
// Then the population itself: a successor's pages from fresh memory against the huge pages a drained
// table gave back (native/core/warm_pages.h), same size, same call.
import { benchPopulatorContention, benchWarmPages } from '../test/support/native-testing';
import type { BenchResult } from './support/result';

/** A table's successor at ~20 M entries of the owner table; large enough to take a few hundred ms. */
const MIB = Number(process.env.PAGES_MIB ?? 512);
/** Linux reports freed huge pages to the host after a 2-s delay (mm/page_reporting.c). */
const FREE_PAGE_REPORTING_MS = 4000;

export async function run(): Promise<BenchResult[]> {
  const r = benchPopulatorContention(MIB);
  // The memory that call freed would come back warm within ~2 s; after that the guest has reported it
  // to the host (free page reporting) and it is fresh again, as a growing pool's next table would find it.
  await new Promise((resolve) => setTimeout(resolve, FREE_PAGE_REPORTING_MS));
  const warm = benchWarmPages(MIB);
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
    {
      name: `background population of ${MIB} MiB from a drained table's kept huge pages (moved in, zeroed)`,
      value: warm.keptMs / MIB,
      unit: 'ms/MiB',
      baseline: { name: 'the same population from fresh pages', value: warm.freshMs / MIB },
      ratio: warm.keptMs / warm.freshMs,
      note: `${warm.replaced} of ${MIB / 2} huge pages taken from WarmPages; ${warm.keptMs.toFixed(1)} ms against ${warm.freshMs.toFixed(1)} ms`,
    },
  ];
}
