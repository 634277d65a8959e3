// The background page population (native/page_populator.h) steps aside while the relay's own threads
// map, unmap or advise memory: each such call waits for the address-space lock, which the populating
// thread holds while it faults a huge page in, so a growing pool's apply thread waited once per call.
import { checkPopulatorPause } from '../support/native-testing';

describe('background page population', () => {
  it('starts no page while the caller changes the address space, and finishes once it is done', () => {
    const run = checkPopulatorPause();
    expect(run.whilePaused).toBe(false);
    expect(run.afterResume).toBe(true);
  });
});
