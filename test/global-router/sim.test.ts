// The evaluation, short enough for CI, on the Mooncake trace at one load point (70 % of the window's capacity),
// through `npm run sim:multidc`'s entry as a process of its own (from the sources): the ordering of
// all policies on the exact (oracle) view; relay-fed runs with the DCs and relays as processes of
// their own; a DC lost and back. The full sweep and its numbers: docs/router-evaluation.md.
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { POLICY_NAMES } from '../../examples/global-router/router';
import type { RequestRecord } from '../../examples/global-router/sim/driver';
import type { RunResult } from '../../examples/global-router/sim/experiment';
import type { FaultResult } from '../../examples/global-router/sim/faults';
import { ROOT } from '../support/cli-process';

const MAIN = path.join(ROOT, 'examples', 'global-router', 'sim', 'main.ts');
const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');
const TRACE = path.resolve(ROOT, '..', 'shared', 'traces', 'mooncake_conversation_trace.jsonl');
const AT = ['--trace', TRACE, '--loads', '0.7', '--seeds', '1'];
/** Generous for a shared machine: each relay-fed run starts seven processes. */
const TIMEOUT_MS = 300_000;

/** Runs the simulation with `args` into a fresh folder; resolves with that folder's `file`, parsed (and `also`'s, under `also`). */
function simulate<T>(args: string[], file: string, also?: string): Promise<T> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'sim-test-'));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', HOOK, MAIN, ...args, '--out', out], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`sim exited ${code}: ${stderr.slice(-2000)}`);
        const read = (f: string) => JSON.parse(fs.readFileSync(path.join(out, f), 'utf8')) as unknown;
        resolve((also === undefined ? read(file) : { ...(read(file) as object), also: read(also) }) as T);
      } catch (err) {
        reject(err);
      } finally {
        fs.rmSync(out, { recursive: true, force: true });
      }
    });
  });
}

const byPolicy = (runs: RunResult[]) => new Map(runs.map((r) => [r.policy as string, r.summary]));

test(
  'on the exact view at 70 % of the window\'s capacity, kv-aware serves more from cache than the cache-blind policies, beats every baseline but llm-d by goodput at the SLO and median TTFT, and ties llm-d',
  async () => {
    const { runs, also: records } = await simulate<{ runs: RunResult[]; also: (RequestRecord & { sloMs: number })[] }>(
      [...AT, '--view', 'oracle', '--requests', '700', '--warmup', '300', '--records'],
      'sweep.json',
      'records-kv-aware-0.7-1.json',
    );
    const s = byPolicy(runs);
    // --records: the measured requests, each with the SLO it was judged by, agreeing with the summary.
    expect(records).toHaveLength(400);
    expect(records.filter((r) => r.ttftMs !== null && r.ttftMs <= r.sloMs).length / records.length).toBe(s.get('kv-aware')!.sloAttainment);
    expect([...s.keys()].sort()).toEqual([...POLICY_NAMES].sort());
    const ours = s.get('kv-aware')!;
    expect(ours.served).toBe(ours.requests);
    // Not overloaded at 70 % (the window's own capacity): most requests meet their SLO.
    expect(ours.sloAttainment).toBeGreaterThan(0.8);
    expect(ours.hitRate).toBeGreaterThan(s.get('round-robin')!.hitRate + 0.03);
    // 2026-12-06 (before the triage): kv-aware 2.87 req/s, 908 ms; the others 1.85-2.41 req/s, 1 331-1 956 ms.
    // The triage (routers told each request's SLO, the default) leaves 70 % as it was: passed 2026-12-07.
    for (const p of POLICY_NAMES.filter((x) => x !== 'kv-aware' && x !== 'llm-d')) {
      const other = s.get(p)!;
      expect({ p, better: ours.goodputPerS > 1.1 * other.goodputPerS, faster: ours.ttftMs.p50 < other.ttftMs.p50 }).toEqual({ p, better: true, faster: true });
    }
    // On this window the llm-d-style scorer ties it (2.87 against 2.87 req/s) with a lower median TTFT
    // (771 against 908 ms) and a higher hit rate (18.0 against 15.8 %): docs/router-evaluation.md.
    expect(ours.goodputPerS).toBeGreaterThan(0.97 * s.get('llm-d')!.goodputPerS);
  },
  TIMEOUT_MS,
);

test(
  'fed by relays in processes of their own, kv-aware routes on what the engines hold and meets the SLO more often than random',
  async () => {
    const { runs } = await simulate<{ runs: RunResult[] }>([...AT, '--requests', '300', '--warmup', '100', '--wall-rate', '30', '--policies', 'kv-aware,random'], 'sweep.json');
    const s = byPolicy(runs);
    const [ours, random] = [s.get('kv-aware')!, s.get('random')!];
    for (const x of [ours, random]) {
      expect(x.served).toBe(x.requests);
      expect(x.retried).toBe(0);
    }
    // No hit-rate comparison here: this window reuses ~8 % of its blocks, and kv-aware trades some of
    // those hits for balance (0.064-0.085 against random's 0.081 over runs at the hour-wide load of
    // 2026-12-06; 0.092 against 0.055 in one run at the window's own 70 %, SLO 0.91 against 0.70).
    // The hit-rate advantage is asserted on the exact view above, where it is wide.
    // What the router read from the relays is close to what the engines then reused.
    expect(ours.estimatedHitRate).toBeGreaterThan(0);
    expect(Math.abs(ours.estimatedHitRate - ours.hitRate)).toBeLessThan(0.05);
    expect(random.estimatedHitRate).toBe(0); // random never looks at the cache
    expect(ours.sloAttainment).toBeGreaterThan(random.sloAttainment);
  },
  TIMEOUT_MS,
);

test(
  'a lost DC: its requests in flight are retried elsewhere, nothing is routed there while it is gone, and it takes traffic again once back',
  async () => {
    const { results } = await simulate<{ results: FaultResult[] }>(
      ['--trace', TRACE, '--load', '0.7', '--seed', '1', '--requests', '300', '--warmup', '100', '--wall-rate', '30', '--policies', 'kv-aware', '--faults', 'dc-loss'],
      'faults.json',
    );
    const [r] = results;
    const during = r.timeline.filter((w) => w.fromMs >= r.faultAtMs! && w.toMs <= r.recoverAtMs!);
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((w) => w.toVictim === 0)).toBe(true);
    expect(r.timeline.some((w) => w.retried > 0)).toBe(true);
    const after = r.timeline.filter((w) => w.fromMs >= r.recoverAtMs!);
    expect(after.some((w) => w.toVictim > 0)).toBe(true);
  },
  TIMEOUT_MS,
);
