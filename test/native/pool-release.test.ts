// PoolFilterState.release() with its releaser held (the testing addon's own pool binding and
// releaser: test/support/native-testing.ts): releases pending on the releaser's thread hold none of
// libuv's threads, settle on their thread once the releaser freed their state (which keeps the thread
// alive meanwhile), and a thread that exits or is terminated, or a process that exits, with a release
// pending ends cleanly, the state freed all the same.
import { pbkdf2 } from 'crypto';
import { execFile } from 'child_process';
import { promisify } from 'util';
import { Worker } from 'worker_threads';
import { DEFAULT_CKF_MAX_KICKS, DEFAULT_CKF_SEED } from '../../src/config/defaults';
import { nativeTarget, packageRoot } from '../../src/native/addon';
import { testingAddon } from '../support/native-testing';
import { waitFor } from '../support/waitFor';
import { expectThrows } from './hashing.helpers';

const { PoolFilterState, poolStateMemory } = testingAddon.releasePool;
const hold = testingAddon.holdPoolReleases;
const ADDON = nativeTarget(packageRoot()).testingBuildPath(packageRoot());
// ~12 MiB of tables each: far above what other tests' states garbage-collected meanwhile free.
const BLOCKS = 1 << 18;

const reserved = (): InstanceType<typeof PoolFilterState> =>
  new PoolFilterState(1024, DEFAULT_CKF_SEED, DEFAULT_CKF_MAX_KICKS, undefined, BLOCKS, BLOCKS);
const live = (): number => poolStateMemory().liveBytes;

/**
 * A worker thread that makes a reserved pool of the testing addon, releases it and posts its bytes,
 * then runs `then`; it posts 'settled' if the release settles there.
 */
function releasingThread(then: string): Worker {
  const code = `
    const { releasePool } = require(${JSON.stringify(ADDON)});
    const { parentPort } = require('worker_threads');
    const p = new releasePool.PoolFilterState(1024, ${DEFAULT_CKF_SEED}n, ${DEFAULT_CKF_MAX_KICKS}, undefined, ${BLOCKS}, ${BLOCKS});
    const bytes = p.stateBytes();
    void p.release().then(() => parentPort.postMessage('settled'));
    parentPort.postMessage(bytes);
    ${then}`;
  return new Worker(code, { eval: true });
}

afterEach(() => hold(false));

test('releases waiting for the releaser hold none of libuv\'s threads; they settle once it freed them, and their bytes leave poolStateMemory then', async () => {
  // More releases than libuv has threads: had each one's settling waited on a libuv thread, nothing
  // else queued there would run until the releaser freed them.
  const pools = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE ?? 4) + 2 }, reserved);
  const bytes = pools.reduce((sum, p) => sum + p.stateBytes(), 0);
  const before = live();
  hold(true);
  let settled = 0;
  const released = pools.map((p) => p.release().then(() => settled++));
  let ran = false;
  pbkdf2('job', 'salt', 1, 32, 'sha512', () => (ran = true));
  await waitFor(() => ran, 'a libuv threadpool job run while the releases wait', 20_000);
  // Each state is the releaser's now (the pool refuses calls) and still counted, its promise pending.
  expectThrows(() => pools[0].stateBytes(), 'Error', 'PoolClosed');
  expect(settled).toBe(0);
  expect(before - live()).toBeLessThan(bytes / 2);
  hold(false);
  await Promise.all(released);
  expect(before - live()).toBeGreaterThanOrEqual(bytes);
  // Released already: nothing left to free.
  await expect(pools[0].release()).resolves.toBeUndefined();
});

test('a thread with nothing else to do stays alive until its release settled there', async () => {
  const worker = releasingThread('');
  const settled = new Promise<unknown>((resolve, reject) => {
    worker.on('message', (m) => m === 'settled' && resolve(m));
    worker.once('exit', () => reject(new Error('the thread ended before its release settled')));
  });
  await expect(settled).resolves.toBe('settled');
});

test.each(['exits', 'is terminated'])('a thread that %s with its release pending waits in its teardown until the state is freed, and ends cleanly', async (how) => {
  hold(true);
  const before = live();
  const worker = releasingThread(how === 'exits' ? 'process.exit(0);' : 'setInterval(() => undefined, 1 << 30);');
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const bytes = await new Promise<number>((resolve) => worker.once('message', resolve));
  if (how === 'is terminated') void worker.terminate();
  await waitFor(() => testingAddon.poolReleasesHoldingTeardown() === 1, 'the thread\'s teardown waiting for its release', 20_000);
  expect(live() - before).toBeGreaterThanOrEqual(bytes);
  hold(false);
  expect(await exited).toBe(how === 'exits' ? 0 : 1);
  // Freed before the thread's exit was seen.
  expect(live()).toBeLessThanOrEqual(before);
  expect(testingAddon.poolReleasesHoldingTeardown()).toBe(0);
});

test('a thread terminated after the releaser freed its state, before the promise settled there, ends cleanly', async () => {
  const before = live();
  // The thread spins after release(): the releaser's wake-up waits in its loop until the teardown.
  const worker = releasingThread('for (;;);');
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  await new Promise((resolve) => worker.once('message', resolve));
  await waitFor(() => live() <= before, 'the state freed by the releaser', 20_000);
  void worker.terminate();
  expect(await exited).toBe(1);
  expect(testingAddon.poolReleasesHoldingTeardown()).toBe(0);
});

test('a process that exits with a release pending on the held releaser exits cleanly', async () => {
  const code = `
    const addon = require(${JSON.stringify(ADDON)});
    const p = new addon.releasePool.PoolFilterState(1024, ${DEFAULT_CKF_SEED}n, ${DEFAULT_CKF_MAX_KICKS}, undefined, ${BLOCKS}, ${BLOCKS});
    addon.holdPoolReleases(true);
    void p.release();
    process.stdout.write('released');
    process.exit(0);`;
  // A bound only so that a process that hung is not left behind.
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', code], { timeout: 30_000 });
  expect(stdout).toBe('released');
});

test('holdPoolReleases takes a boolean', () => {
  expectThrows(() => (hold as (x: unknown) => void)(1), 'TypeError');
});
