// Starts an ingest thread. A built package runs the compiled thread.js beside this file; run from
// the TypeScript sources (jest, `node -r scripts/ts-hook.js`), the thread loads thread.ts through
// the same transpile-only hook, since a worker thread does not inherit jest's or the hook's loader.
import * as path from 'path';
import { Worker } from 'worker_threads';
import type { ThreadData } from './protocol';

export function spawnThread(data: ThreadData): Worker {
  return spawnModuleThread(path.join(__dirname, 'thread'), data);
}

/**
 * A worker thread running the module `base` (a path without extension, beside its caller: `.js` when
 * built, `.ts` through the hook when run from the sources), with `data` as its workerData.
 */
export function spawnModuleThread(base: string, data: unknown): Worker {
  if (path.extname(__filename) !== '.ts') return new Worker(`${base}.js`, { workerData: data });
  const hook = path.resolve(__dirname, '..', '..', '..', 'scripts', 'ts-hook.js');
  return new Worker(`require(${JSON.stringify(hook)}); require(${JSON.stringify(`${base}.ts`)});`, { eval: true, workerData: data });
}
