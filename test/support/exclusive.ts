// Chaos tests load the 2-core box to its limit and two of them measure latency or expect the relay
// to keep up: run side by side (jest runs files in parallel) they starved each other's relay, which
// then dropped batches on a full mailbox or missed the 1.2x latency bound. A test file that calls
// runAlone() holds a lock file from its first test to its last, so such files run one at a time,
// also across jest workers and across checkouts on the same machine.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { waitFor } from './waitFor';

const LOCK = path.join(os.tmpdir(), 'kv-dc-relay-chaos.lock');
/** Long enough for every other chaos file to finish first. */
const WAIT_MS = 15 * 60_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The lock, taken; false while another live process holds it (a dead holder's lock is removed). */
function tryLock(): boolean {
  try {
    fs.writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const holder = readHolder();
    // This jest worker's own lock is one its earlier file could not release.
    if (holder === process.pid) return true;
    if (holder !== undefined && !alive(holder)) fs.rmSync(LOCK, { force: true });
    return false;
  }
}

/** The pid in the lock file; undefined when it is gone or not yet written. */
function readHolder(): number | undefined {
  try {
    const pid = Number(fs.readFileSync(LOCK, 'utf8'));
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function runAlone(): void {
  beforeAll(() => waitFor(tryLock, 'the other chaos tests to finish', WAIT_MS, 100), WAIT_MS + 10_000);
  afterAll(() => {
    if (readHolder() === process.pid) fs.rmSync(LOCK, { force: true });
  });
}
