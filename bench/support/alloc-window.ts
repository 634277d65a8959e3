// The bench's side of alloc-probe.ts: a process started with `args` and `env` counts what its
// isolates allocate between open() and close().
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { waitFor } from '../../test/support/waitFor';
import { ALLOC_PROBE_SIGNAL, type IsolateAllocation } from './alloc-probe';

const ANSWER_TIMEOUT_MS = 10_000;
const ANSWER_POLL_MS = 20;

/** How a process that a bench measures is started with the probe. */
export interface ProcessLaunch {
  nodeArgs: string[];
  env: NodeJS.ProcessEnv;
}

export class AllocWindows {
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-alloc-'));
  /** The windows opened so far per process. */
  private readonly windows = new Map<number, number>();
  readonly launch: ProcessLaunch = { nodeArgs: probeArgs(), env: { ...process.env, ALLOC_PROBE_DIR: this.dir } };

  /** Starts counting in every isolate of `pid` (a process started with `launch`). */
  async open(pid: number | undefined): Promise<void> {
    const window = (this.windows.get(pid!) ?? 0) + 1;
    this.windows.set(pid!, window);
    process.kill(pid!, ALLOC_PROBE_SIGNAL);
    await this.answer(`${pid}-window-${window}.started`);
  }

  /** Stops counting: what each isolate allocated since open(). */
  async close(pid: number | undefined): Promise<IsolateAllocation[]> {
    process.kill(pid!, ALLOC_PROBE_SIGNAL);
    const file = await this.answer(`${pid}-window-${this.windows.get(pid!)}.json`);
    return JSON.parse(fs.readFileSync(file, 'utf8')) as IsolateAllocation[];
  }

  dispose(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private async answer(name: string): Promise<string> {
    const file = path.join(this.dir, name);
    await waitFor(() => fs.existsSync(file), `the allocation probe's ${name}`, ANSWER_TIMEOUT_MS, ANSWER_POLL_MS);
    return file;
  }
}

/** Preloads the probe: the compiled one beside this file, or from the sources through the transpile hook (tests). */
function probeArgs(): string[] {
  if (path.extname(__filename) !== '.ts') return ['-r', path.join(__dirname, 'alloc-probe.js')];
  return ['-r', path.join(__dirname, '..', '..', 'scripts', 'ts-hook.js'), '-r', path.join(__dirname, 'alloc-probe.ts')];
}
