// The background page population (native/page_populator.h): it steps aside while the relay's own
// threads map, unmap or advise memory (where a huge page's fault holds what such a call needs, a
// growing pool's apply thread waited once per call), and it faults pages in without changing them.
import { checkPopulatorPause, checkPopulatorResult } from '../support/native-testing';

describe('background page population', () => {
  it('starts no page while the caller changes the address space, and finishes once it is done', () => {
    const run = checkPopulatorPause();
    expect(run.whilePaused).toBe(false);
    expect(run.afterResume).toBe(true);
  });

  it('faults every page in for writing and keeps what the owner already wrote', () => {
    const run = checkPopulatorResult();
    // A read would map the shared zero page (no growth); a plain write of 0 would wipe the owner's words.
    expect(run.residentGrowth).toBeGreaterThanOrEqual(0.9 * run.untouchedBytes);
    expect(run.writesKept).toBe(true);
  });
});
