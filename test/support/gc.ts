import { setFlagsFromString } from 'v8';
import { runInNewContext } from 'vm';

/** V8's gc(), without starting node with --expose-gc. */
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** One full garbage collection now (a measurement that must not count garbage made before it). */
export function collectGarbage(): void {
  exposeGc()();
}

/** Runs `body` while garbage collections run every few ms (what an object held only weakly meets). */
export async function whileCollecting<T>(body: () => Promise<T>): Promise<T> {
  const collecting = setInterval(exposeGc(), 5);
  try {
    return await body();
  } finally {
    clearInterval(collecting);
  }
}
