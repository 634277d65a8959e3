// setThreadSlice / threadSlice / setThreadName act on the calling thread only: run in a worker thread
// of their own so that the jest worker keeps its slice and name.
import { Worker } from 'worker_threads';
import * as path from 'path';
import * as fs from 'fs';
import { setThreadName, setThreadSlice, threadSlice } from '../../src/native';
import { expectThrows } from './hashing.helpers';

const ROOT = path.join(__dirname, '..', '..');

function inWorker<T>(body: string): Promise<T> {
  const script = `
    require(${JSON.stringify(path.join(ROOT, 'scripts', 'ts-hook.js'))});
    const { setThreadName, setThreadSlice, threadSlice } = require(${JSON.stringify(path.join(ROOT, 'src', 'native'))});
    const fs = require('fs');
    const { parentPort } = require('worker_threads');
    parentPort.postMessage((() => { ${body} })());`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(script, { eval: true });
    worker.once('message', (m: T) => resolve(m));
    worker.once('error', reject);
  });
}

describe('setThreadSlice', () => {
  test('sets the calling thread slice where the kernel allows it, and reports what it did', async () => {
    const { before, set, after, again } = await inWorker<{ before: number | null; set: boolean; after: number | null; again: number | null }>(`
      const before = threadSlice();
      const set = setThreadSlice(250);
      const after = threadSlice();
      setThreadSlice(3000);
      return { before, set, after, again: threadSlice() };`);
    expect(typeof set).toBe('boolean');
    if (set) {
      expect(after).toBe(250);
      expect(again).toBe(3000);
    } else {
      expect(after).toBe(before);
    }
    // The slice is the worker's: this thread's is untouched.
    expect(threadSlice()).toBe(before);
  });

  test('threads the calling thread starts afterwards keep the default slice (issue 26 item 10)', async () => {
    // Before, every thread started after it (libuv's pool, ingest workers) inherited the short slice.
    const hook = JSON.stringify(path.join(ROOT, 'scripts', 'ts-hook.js'));
    const native = JSON.stringify(path.join(ROOT, 'src', 'native'));
    const script = `
      require(${hook});
      const { setThreadSlice, threadSlice } = require(${native});
      const { parentPort, Worker } = require('worker_threads');
      const before = threadSlice();
      const set = setThreadSlice(250);
      const child = new Worker('const { parentPort } = require("worker_threads"); require(' + JSON.stringify(${hook}) + '); parentPort.postMessage(require(' + JSON.stringify(${native}) + ').threadSlice());', { eval: true });
      child.once('message', (slice) => parentPort.postMessage({ before, set, own: threadSlice(), child: slice }));`;
    const r = await new Promise<{ before: number | null; set: boolean; own: number | null; child: number | null }>((resolve, reject) => {
      const worker = new Worker(script, { eval: true });
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (!r.set) return; // a kernel without a settable slice: nothing to inherit
    expect(r.own).toBe(250);
    expect(r.child).not.toBe(250);
    expect(r.child).toBe(r.before);
  });

  test('rejects what is not an integer number of microseconds in [100, 100000]', () => {
    for (const bad of [99, 100_001, 1.5, -1, NaN, Infinity]) expectThrows(() => setThreadSlice(bad), 'RangeError');
    for (const bad of ['250', 250n, undefined, null, {}]) expectThrows(() => setThreadSlice(bad as unknown as number), 'TypeError');
    expectThrows(() => (setThreadSlice as unknown as (...a: unknown[]) => boolean)(250, 1), 'TypeError');
    expectThrows(() => (threadSlice as unknown as (...a: unknown[]) => unknown)(1), 'TypeError');
  });
});

describe('setThreadName', () => {
  test('names the calling thread only, as /proc shows it', async () => {
    const own = fs.readFileSync('/proc/thread-self/comm', 'utf8');
    const { set, comm } = await inWorker<{ set: boolean; comm: string }>(`
      const set = setThreadName('kvrelay-test');
      return { set, comm: fs.readFileSync('/proc/thread-self/comm', 'utf8').trim() };`);
    expect(set).toBe(true);
    expect(comm).toBe('kvrelay-test');
    expect(fs.readFileSync('/proc/thread-self/comm', 'utf8')).toBe(own);
  });

  test('rejects what is not 1 to 15 printable ASCII characters', () => {
    for (const bad of ['', 'sixteen-chars-xx', 'tab\there', 'né']) expectThrows(() => setThreadName(bad), 'RangeError');
    for (const bad of [1, undefined, null, {}]) expectThrows(() => setThreadName(bad as unknown as string), 'TypeError');
    expectThrows(() => (setThreadName as unknown as (...a: unknown[]) => boolean)('a', 'b'), 'TypeError');
  });
});
