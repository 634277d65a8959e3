// Receive stamps are taken on ingest threads and subtracted on the main thread
// (kv_dc_relay_pool_delta_latency_seconds): the clock must read the same on every thread. A clock
// whose origin is the thread's own start would fail this.
import { Worker } from 'worker_threads';
import * as path from 'path';
import { monotonicMs } from '../../src/clock';

const ROOT = path.join(__dirname, '..', '..');

test('a time taken on a worker thread falls between two taken around it on the main thread', async () => {
  const script = `
    require(${JSON.stringify(path.join(ROOT, 'scripts', 'ts-hook.js'))});
    const { monotonicMs } = require(${JSON.stringify(path.join(ROOT, 'src', 'clock'))});
    const { parentPort } = require('worker_threads');
    parentPort.once('message', () => parentPort.postMessage(monotonicMs()));`;
  const worker = new Worker(script, { eval: true });
  try {
    const taken = new Promise<number>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    const before = monotonicMs();
    worker.postMessage('now');
    const inWorker = await taken;
    const after = monotonicMs();
    expect(inWorker).toBeGreaterThanOrEqual(before);
    expect(inWorker).toBeLessThanOrEqual(after);
  } finally {
    await worker.terminate();
  }
});
