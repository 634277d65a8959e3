// keptPageBytes (the kv_dc_relay_kept_page_bytes gauge): a pool whose tables grow gives the drained
// tables' pages to the process's kept pages for the next growth; they count until they expire.
import { keptPageBytes, PoolFilterState } from '../../src/native';
import { rootPromptBatches } from '../support/packed';
import { waitFor } from '../support/waitFor';
import { expectThrows } from './hashing.helpers';

/** Kept pages expire 3 s after they were given back (native/core/warm_pages.h); a generous margin. */
const EXPIRY_WAIT_MS = 15_000;

test('a growing pool keeps its drained pages for a while, then none', async () => {
  // Whatever earlier tests in this process left has expired first.
  await waitFor(() => keptPageBytes() === 0, 'no kept pages before the fill', EXPIRY_WAIT_MS);
  const pool = new PoolFilterState({ bucketCount: 1 << 16 });
  // One source's 16-block root prompts: its lineage table and the owner table grow past several MiB,
  // and each growth drains the table before into its successor a huge page at a time.
  const blocks = 300_000;
  let most = 0;
  for (const batch of rootPromptBatches(blocks, 1)) {
    await pool.applyAsync(batch);
    most = Math.max(most, keptPageBytes());
  }
  expect(most).toBeGreaterThanOrEqual(2 << 20); // at least a huge page
  expect(most % (2 << 20)).toBe(0);
  await waitFor(() => keptPageBytes() === 0, 'the kept pages to expire', EXPIRY_WAIT_MS);
});

test('keptPageBytes takes no arguments', () => {
  expectThrows(() => (keptPageBytes as (x: unknown) => number)(1), 'TypeError');
});
