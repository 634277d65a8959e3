// setThreadSlice / threadSlice act on the calling thread only: run in a worker thread of their own so
// that the jest worker keeps its slice.
import { Worker } from 'worker_threads';
import * as path from 'path';
import { setThreadSlice, threadSlice } from '../../src/native';
import { expectThrows } from './hashing.helpers';

const ROOT = path.join(__dirname, '..', '..');

function inWorker<T>(body: string): Promise<T> {
  const script = `
    require(${JSON.stringify(path.join(ROOT, 'scripts', 'ts-hook.js'))});
    const { setThreadSlice, threadSlice } = require(${JSON.stringify(path.join(ROOT, 'src', 'native'))});
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

  test('rejects what is not an integer number of microseconds in [100, 100000]', () => {
    for (const bad of [99, 100_001, 1.5, -1, NaN, Infinity]) expectThrows(() => setThreadSlice(bad), 'RangeError');
    for (const bad of ['250', 250n, undefined, null, {}]) expectThrows(() => setThreadSlice(bad as unknown as number), 'TypeError');
    expectThrows(() => (setThreadSlice as unknown as (...a: unknown[]) => boolean)(250, 1), 'TypeError');
    expectThrows(() => (threadSlice as unknown as (...a: unknown[]) => unknown)(1), 'TypeError');
  });
});
