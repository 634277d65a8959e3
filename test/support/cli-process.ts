// The `kv-dc-relay` command as a real child process, run from the TypeScript sources (ts-hook.js).
import { spawn, type ChildProcess, type StdioOptions } from 'child_process';
import * as path from 'path';

export const ROOT = path.resolve(__dirname, '..', '..');
const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');
const MAIN = path.join(ROOT, 'src', 'cli', 'main.ts');

/** Starts `kv-dc-relay ...args` in the repository root. */
export function spawnCli(args: string[], stdio: StdioOptions = ['ignore', 'pipe', 'pipe']): ChildProcess {
  return spawn(process.execPath, ['-r', HOOK, MAIN, ...args], { cwd: ROOT, stdio });
}

/** Runs `kv-dc-relay ...args` to its exit, collecting its output. */
export function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawnCli(args);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The `address` of the first JSON log line whose msg is `msg` (the relay logs each listener once). */
export function loggedAddress(stderr: string, msg: string): string | undefined {
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    const ev = JSON.parse(line) as { msg?: string; address?: string };
    if (ev.msg === msg && ev.address) return ev.address;
  }
  return undefined;
}
