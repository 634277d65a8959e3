// bench/support/relay-process killWithThisProcess: a bench ended by a signal (Ctrl-C, `kill`) still
// takes its relay, firehose or bare-hop process with it. A signal's default action ends a process
// without its 'exit' event, which is where the child is killed.
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.join(__dirname, '..', '..');
const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');

/** A bench-like process that starts a long-lived child under killWithThisProcess and prints its pid. */
const BENCH = `
const { spawn } = require('child_process');
const { killWithThisProcess } = require(${JSON.stringify(path.join(ROOT, 'bench', 'support', 'relay-process'))});
const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
killWithThisProcess(child);
child.once('spawn', () => console.log(child.pid));
setInterval(() => {}, 1000);
`;

/** Alive: /proc has it and it is not a zombie waiting for its reaper. */
function alive(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0] !== 'Z';
  } catch {
    return false;
  }
}

/** Resolves once `pid` is gone; false after `ms` (the kernel ends a SIGKILLed process asynchronously, and /proc is the only place to watch it). */
async function gone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

test.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)('a bench ended by %s takes its child process with it', async (signal) => {
  const bench = spawn(process.execPath, ['-r', HOOK, '-e', BENCH], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((resolve, reject) => {
    bench.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString().trim())));
    bench.once('exit', (code) => reject(new Error(`bench exited ${code} before its child started`)));
  });
  try {
    expect(alive(pid)).toBe(true);
    const exited = new Promise<number | null>((resolve) => bench.once('exit', (code) => resolve(code)));
    bench.kill(signal);
    // Exited (not killed by the signal), with the shell's code for it.
    expect(await exited).toBe(128 + ({ SIGTERM: 15, SIGINT: 2, SIGHUP: 1 } as const)[signal]);
    expect(await gone(pid, 5_000)).toBe(true);
  } finally {
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
});
