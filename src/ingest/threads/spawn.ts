// Starts an ingest thread. A built package runs the compiled thread.js beside this file; run from
// the TypeScript sources (jest, `node -r scripts/ts-hook.js`), the thread loads thread.ts through
// the same transpile-only hook, since a worker thread does not inherit jest's or the hook's loader.
import * as path from 'path';
import { Worker } from 'worker_threads';
import type { ThreadData } from './protocol';

export function spawnThread(data: ThreadData): Worker {
  if (path.extname(__filename) !== '.ts') return new Worker(path.join(__dirname, 'thread.js'), { workerData: data });
  const hook = path.resolve(__dirname, '..', '..', '..', 'scripts', 'ts-hook.js');
  const entry = path.join(__dirname, 'thread.ts');
  return new Worker(`require(${JSON.stringify(hook)}); require(${JSON.stringify(entry)});`, { eval: true, workerData: data });
}
