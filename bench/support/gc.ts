// A full garbage collection on demand, without requiring `node --expose-gc`: benchmarks use it
// to start each sample from the same heap (and to let native finalizers return memory).
import * as v8 from 'v8';
import * as vm from 'vm';

let gc: (() => void) | undefined;

export async function fullGc(): Promise<void> {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc') as () => void;
  }
  gc();
  // Finalizers of external memory run on the following turns of the event loop.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}
