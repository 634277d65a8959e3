// The loop-turn count the hub's pacing reads (native LoopTurns): it holds within a turn, moves once
// per loop iteration, keeps no loop alive, and goes with its environment (collected counters
// included) without a crash at exit.
import { spawn } from 'child_process';
import * as path from 'path';
import { LoopTurns } from '../../src/native';
import { currentTurn } from '../../src/publication/loop-turn';
import { ROOT } from '../support/cli-process';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('holds within a turn and moves once per turn of the loop', async () => {
  const first = currentTurn();
  for (let i = 0; i < 1000; i += 1) expect(currentTurn()).toBe(first);
  await nextTurn();
  const second = currentTurn();
  expect(second).toBe(first + 1);
  await Promise.resolve(); // a microtask is no new turn
  expect(currentTurn()).toBe(second);
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(currentTurn()).toBeGreaterThan(second);
});

test('keeps counting through garbage collections (the counter is held, not only its array)', async () => {
  const script = `
    const { currentTurn } = require(${JSON.stringify(path.join(ROOT, 'src', 'publication', 'loop-turn.ts'))});
    const before = currentTurn();
    global.gc(); global.gc();
    setTimeout(() => { global.gc(); setTimeout(() => process.stdout.write(String(currentTurn() - before)), 5); }, 5);`;
  const child = spawn(process.execPath, ['--expose-gc', '-r', path.join(ROOT, 'scripts', 'ts-hook.js'), '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(0);
  expect(Number(out)).toBeGreaterThanOrEqual(2);
});

test('a closed counter stops moving; the constructor takes no arguments', async () => {
  const turns = new LoopTurns();
  await nextTurn();
  const seen = turns.counts[0];
  expect(seen).toBeGreaterThan(0);
  turns.close();
  turns.close();
  await nextTurn();
  await nextTurn();
  expect(turns.counts[0]).toBe(seen);
  expect(() => new (LoopTurns as unknown as new (x: number) => LoopTurns)(1)).toThrow(/takes no arguments/);
});

test('a process with counters, some closed and collected, ends by running out of work, cleanly', async () => {
  // Unreferenced: the open counter does not keep the loop alive. The child must end on its own
  // (process.exit() would skip the environment's cleanup hooks, which close the open counter).
  const script = `
    const { LoopTurns } = require(${JSON.stringify(path.join(ROOT, 'src', 'native', 'index.ts'))});
    const { currentTurn } = require(${JSON.stringify(path.join(ROOT, 'src', 'publication', 'loop-turn.ts'))});
    currentTurn();
    for (let i = 0; i < 100; i++) { const t = new LoopTurns(); if (i % 2) t.close(); }
    setTimeout(() => { global.gc(); global.gc(); setTimeout(() => {}, 50); }, 10);`;
  const child = spawn(process.execPath, ['--expose-gc', '-r', path.join(ROOT, 'scripts', 'ts-hook.js'), '-e', script], { cwd: ROOT, stdio: 'ignore' });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  expect({ code, signal }).toEqual({ code: 0, signal: null });
});
