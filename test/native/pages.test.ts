// The background page population (native/core/page_populator.h): it steps aside while the relay's own
// threads map, unmap or advise memory (where a huge page's fault holds what such a call needs, a
// growing pool's apply thread waited once per call), and it faults pages in without changing them.
import { checkPopulatorPause, checkPopulatorResult, checkUnmapOnCaller, checkWarmPagesInUse, checkWarmPagesReuse } from '../support/native-testing';

const HUGE_PAGE = 2 << 20;

describe('background page population', () => {
  it('starts no page while the caller changes the address space, and finishes once it is done', () => {
    const run = checkPopulatorPause();
    expect(run.whilePaused).toBe(false);
    expect(run.afterResume).toBe(true);
  });

  it('a buffer freed where the caller unmaps it (a released pool) is unmapped on return, its population withdrawn, queued or under way', () => {
    const run = checkUnmapOnCaller();
    // Elsewhere the thread unmaps a buffer freed before it got to it, later.
    expect(run.orphanedMapped).toBe(true);
    expect(run.queuedUnmapped).toBe(true);
    expect(run.underWayUnmapped).toBe(true);
  });

  it('faults every page in for writing and keeps what the owner already wrote', () => {
    const run = checkPopulatorResult();
    // A read would map the shared zero page (no growth); a plain write of 0 would wipe the owner's words.
    expect(run.residentGrowth).toBeGreaterThanOrEqual(0.9 * run.untouchedBytes);
    expect(run.writesKept).toBe(true);
  });

  it("moves a drained buffer's huge pages into the next one it populates, zeroed, and unmaps the rest when their hold ends", () => {
    const run = checkWarmPagesReuse();
    expect(run.keptBytes).toBe(16 * HUGE_PAGE);
    expect(run.leftBytes).toBe(8 * HUGE_PAGE);
    // Fresh pages would add the whole buffer to the resident set.
    expect(run.residentGrowth).toBeLessThan(0.25 * run.populatedBytes);
    expect(run.zeroed).toBe(true);
    expect(run.writable).toBe(true);
    expect(run.unmappedAtExpiry).toBeGreaterThanOrEqual(0.9 * 8 * HUGE_PAGE);
  });

  it('moves no kept page into a buffer its owner already uses', () => {
    const run = checkWarmPagesInUse();
    expect(run.keptBytes).toBe(4 * HUGE_PAGE);
    expect(run.leftBytes).toBe(4 * HUGE_PAGE);
    expect(run.writesKept).toBe(true);
  });
});
