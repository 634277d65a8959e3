// bench/support/alloc-probe (bench/message-alloc's counter): between two signals it counts what each
// isolate of the process allocates, garbage included, on the main thread and in worker threads.
import { spawn } from 'child_process';
import { AllocWindows } from '../../bench/support/alloc-window';
import { waitForLine } from '../../bench/support/relay-process';

/** Arrays of 14 elements: 32 bytes of JSArray and 16 + 14 × 8 of elements each, every one garbage. */
const ARRAY_BYTES = 32 + 16 + 14 * 8;
const ARRAYS = 20_000;

// A process whose worker announces itself on the probe's channel (so its main thread knows it) and
// then, like its main thread, allocates ARRAYS arrays on each line of stdin.
const SCRIPT = `
const { Worker, BroadcastChannel } = require('worker_threads');
const make = 'const keep = []; globalThis.allocate = (n) => { for (let i = 0; i < n; i++) keep[i & 63] = new Array(14); };';
eval(make);
const worker = new Worker(make + "require('worker_threads').parentPort.on('message', (n) => { allocate(n); require('worker_threads').parentPort.postMessage('done'); });", { eval: true });
const heard = new BroadcastChannel('kv-dc-relay-bench/alloc-probe');
heard.onmessage = (e) => {
  if (e.data.type !== 'hello') return;
  heard.close();
  setImmediate(() => process.stderr.write('ready\\n'));
};
process.stdin.on('data', () => {
  allocate(${ARRAYS});
  worker.once('message', () => process.stderr.write('allocated\\n'));
  worker.postMessage(${ARRAYS});
});
`;

test('counts what the main thread and a worker allocate between open and close, collected objects included', async () => {
  const windows = new AllocWindows();
  const child = spawn(process.execPath, [...windows.launch.nodeArgs, '-e', SCRIPT], { stdio: ['pipe', 'ignore', 'pipe'], env: windows.launch.env });
  try {
    await waitForLine(child, (l) => (l === 'ready' ? l : undefined));
    await windows.open(child.pid);
    const allocated = waitForLine(child, (l) => (l === 'allocated' ? l : undefined));
    child.stdin!.write('\n');
    await allocated;
    const isolates = await windows.close(child.pid);
    expect(isolates.map((i) => i.thread).sort()).toEqual(['main', 'worker']);
    for (const isolate of isolates) {
      // Sampled (each sample stands for its share of the bytes): within 10 % at these counts, plus the probe's own few KB.
      expect(isolate.bytes).toBeGreaterThan(0.9 * ARRAYS * ARRAY_BYTES);
      expect(isolate.bytes).toBeLessThan(1.1 * ARRAYS * ARRAY_BYTES + 64 * 1024);
      expect(isolate.sites[0]).toMatch(/allocate/);
    }
  } finally {
    child.kill('SIGKILL');
    windows.dispose();
  }
});
