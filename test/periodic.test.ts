// Periodic housekeeping of one interval shares one timer (src/periodic.ts): the diagnostics round and
// the config file's poll wake an idle relay once a second together, not each at its own phase.
import { createHook } from 'async_hooks';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { watchConfigFile } from '../src/config/watch';
import { Diagnostics } from '../src/diagnostics/diagnostics';
import { everyInterval } from '../src/periodic';
import { waitFor } from './support/waitFor';

/** Timers created while `f` runs (ref'd or not: an unref'd timer still wakes the process). */
function timersCreatedBy(f: () => void): number {
  let created = 0;
  const hook = createHook({ init: (_id, type) => void (type === 'Timeout' && created++) }).enable();
  try {
    f();
  } finally {
    hook.disable();
  }
  return created;
}

test('tasks of one interval run on one timer, in order, until each stops; the last stop ends the timer', async () => {
  const runs: string[] = [];
  let stopA: () => void = () => undefined;
  let stopB: () => void = () => undefined;
  const created = timersCreatedBy(() => {
    stopA = everyInterval(10, () => runs.push('a'));
    stopB = everyInterval(10, () => runs.push('b'));
  });
  expect(created).toBe(1);
  await waitFor(() => runs.length >= 4, 'two ticks');
  // Every tick ran both, a before b.
  expect(runs.slice(0, 4)).toEqual(['a', 'b', 'a', 'b']);
  stopA();
  stopA();
  const seen = runs.length;
  await waitFor(() => runs.length >= seen + 2, 'two more ticks');
  expect(runs.slice(seen).every((r) => r === 'b')).toBe(true);
  stopB();
  // The timer ended with its last task: a new task needs a new one.
  expect(timersCreatedBy(() => everyInterval(10, () => undefined)())).toBe(1);
});

test('the diagnostics rounds and the config watch poll share one timer', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-periodic-'));
  const file = path.join(dir, 'relay.yaml');
  fs.writeFileSync(file, 'dcId: dc-a\n');
  const diagnostics = new Diagnostics({
    sample: () => ({ sources: [], pools: [] }),
    relayInfo: () => ({ dcId: 'dc-a', relayIncarnation: '1', address: '127.0.0.1:1', uptimeSeconds: 0 }),
    logger: { warn: () => undefined, info: () => undefined },
  });
  let watcher: { close(): void } | undefined;
  try {
    const created = timersCreatedBy(() => {
      diagnostics.start(1000);
      watcher = watchConfigFile(file, 'dcId: dc-a\n', { onChange: () => undefined, onError: () => undefined });
    });
    expect(created).toBe(1);
  } finally {
    diagnostics.close();
    watcher?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
