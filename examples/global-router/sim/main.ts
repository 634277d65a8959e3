// `npm run sim:multidc -- [options]`: the global router's evaluation. Every knob is a flag (defaults
// in options.ts); results go to --out as JSON (every run and the aggregates), Markdown and SVG, and
// the JSON is written after every run.
import * as fs from 'fs';
import * as path from 'path';
import { parseArgs } from 'util';
import { POLICY_NAMES, type PolicyName } from '../router';
import { CALIBRATION_SOURCES, LLAMA3_8B_A100 } from './engine/calibration';
import { defaultSetup, sloMs, Workload, type RunResult, type Setup } from './experiment';
import { FAULT_NAMES, runFaults, faultsTable, type FaultName } from './faults';
import type { DcSpec, WorkloadKind } from './options';
import { pairedTables, sweepSvg, sweepTable, verdictTable } from './report';
import { aggregate, mergeSweeps, sweep, verdicts } from './sweep';

const DEFAULT_OUT = path.join('examples', 'global-router', 'results');
const OURS: PolicyName = 'kv-aware';

export const USAGE = `usage: npm run sim:multidc -- [options]
  --workload trace|synthetic   --trace PATH          --requests N   --warmup N
  --loads 0.2,0.4,…            --seeds 1,2,3         --policies ${POLICY_NAMES.join(',')}
  --dc NAME:RANKS:ONE_WAY_MS (repeat; default dc-a:4:5 dc-b:2:20 dc-c:2:40)
  --kv-capacity-tokens N       --max-num-seqs N      --max-batched-tokens N   --block-size N
  --view relay|oracle          --routers N           --speed auto|X           --wall-rate N
  --tick-ms N                  --load-window-ms N    --failure-timeout-ms N
  --slo-scale X                --slo-floor-ms N      --prefill-tokens-per-ms X
  --slo-to-router on|off       (routers are told each request's TTFT SLO; kv-aware triages with it)
  --faults all|${FAULT_NAMES.join(',')}  (fault scenarios instead of the sweep; with --load, --seed, --policies)
  --out DIR   (sweep.{json,md,svg} or faults.{json,md})
  --records   (also every run's per-request records, measured ones only, as records-POLICY-LOAD-SEED.json)
  --from FILE (repeat; no runs: the report again from one sweep.json, or from several partial
               sweeps of the same setup merged into one, into --out)`;

class UsageError extends Error {}

const list = (flag: string, text: string, parse: (s: string) => number) =>
  text.split(',').map((s) => {
    const n = parse(s);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag}: ${JSON.stringify(s)} is not a positive number`);
    return n;
  });

function positive(flag: string, text: string | undefined, integer = false): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new UsageError(`${flag} must be a positive ${integer ? 'integer' : 'number'}`);
  return n;
}

function parseDc(text: string): DcSpec {
  const m = /^([A-Za-z0-9._-]+):(\d+):(\d+(?:\.\d+)?)$/.exec(text);
  if (!m || Number(m[2]) < 1) throw new UsageError(`--dc ${JSON.stringify(text)} is not NAME:RANKS:ONE_WAY_MS`);
  return { name: m[1], ranks: Number(m[2]), oneWayMs: Number(m[3]) };
}

function parsePolicies(text: string): PolicyName[] {
  return text.split(',').map((p) => {
    if (!(POLICY_NAMES as readonly string[]).includes(p)) throw new UsageError(`unknown policy ${p} (one of ${POLICY_NAMES.join(', ')})`);
    return p as PolicyName;
  });
}

export interface Cli {
  setup: Setup;
  policies: PolicyName[];
  faults: FaultName[] | null;
  out: string;
  /** Saved sweeps to report from (merged) instead of running. */
  from: string[];
  /** Write each run's measured requests' records beside the sweep. */
  records: boolean;
}

export function parseCli(argv: string[]): Cli {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: Object.fromEntries(
      ['workload', 'trace', 'requests', 'warmup', 'loads', 'seeds', 'policies', 'kv-capacity-tokens', 'max-num-seqs', 'max-batched-tokens', 'block-size', 'view', 'routers', 'speed', 'wall-rate', 'tick-ms', 'load-window-ms', 'failure-timeout-ms', 'slo-scale', 'slo-floor-ms', 'prefill-tokens-per-ms', 'slo-to-router', 'faults', 'out', 'load', 'seed']
        .map((k) => [k, { type: 'string' as const }])
        .concat(['dc', 'from'].map((k) => [k, { type: 'string' as const, multiple: true } as never]))
        .concat([['records', { type: 'boolean' as const } as never]]),
    ),
  }) as { values: Record<string, string | string[] | boolean | undefined>; positionals: string[] };
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const v = (k: string) => values[k] as string | undefined;
  const setup = defaultSetup();
  const run = setup.run;
  const workload = v('workload') ?? run.workload;
  if (workload !== 'trace' && workload !== 'synthetic') throw new UsageError('--workload must be trace or synthetic');
  setup.workload = workload as WorkloadKind;
  run.tracePath = v('trace') ?? run.tracePath;
  run.requests = positive('--requests', v('requests'), true) ?? run.requests;
  run.warmup = v('warmup') === undefined ? Math.min(run.warmup, Math.floor(run.requests / 2)) : Number(v('warmup'));
  if (!Number.isInteger(run.warmup) || run.warmup < 0 || run.warmup >= run.requests) throw new UsageError('--warmup must be an integer in 0..requests-1');
  if (v('loads')) run.loads = list('--loads', v('loads')!, Number);
  if (v('load')) run.loads = list('--load', v('load')!, Number);
  if (v('seeds')) run.seeds = list('--seeds', v('seeds')!, Number);
  if (v('seed')) run.seeds = list('--seed', v('seed')!, Number);
  if (!run.seeds.every(Number.isInteger)) throw new UsageError('seeds must be integers');
  const dcs = values.dc as string[] | undefined;
  if (dcs && dcs.length > 0) setup.dcs = dcs.map(parseDc);
  if (new Set(setup.dcs.map((d) => d.name)).size !== setup.dcs.length) throw new UsageError('DC names must be unique');
  setup.engine = {
    blockSize: positive('--block-size', v('block-size'), true) ?? setup.engine.blockSize,
    kvCapacityTokens: positive('--kv-capacity-tokens', v('kv-capacity-tokens'), true) ?? setup.engine.kvCapacityTokens,
    maxNumSeqs: positive('--max-num-seqs', v('max-num-seqs'), true) ?? setup.engine.maxNumSeqs,
    maxBatchedTokens: positive('--max-batched-tokens', v('max-batched-tokens'), true) ?? setup.engine.maxBatchedTokens,
  };
  const view = v('view') ?? setup.view;
  if (view !== 'relay' && view !== 'oracle') throw new UsageError('--view must be relay or oracle');
  setup.view = view;
  setup.routers = positive('--routers', v('routers'), true) ?? setup.routers;
  const speed = v('speed');
  run.speed = speed === undefined || speed === 'auto' ? run.speed : positive('--speed', speed)!;
  run.wallRequestsPerS = positive('--wall-rate', v('wall-rate')) ?? run.wallRequestsPerS;
  run.tickMs = positive('--tick-ms', v('tick-ms')) ?? run.tickMs;
  run.loadWindowMs = positive('--load-window-ms', v('load-window-ms'), true) ?? run.loadWindowMs;
  run.failureTimeoutMs = positive('--failure-timeout-ms', v('failure-timeout-ms')) ?? run.failureTimeoutMs;
  run.sloScale = positive('--slo-scale', v('slo-scale')) ?? run.sloScale;
  run.sloFloorMs = v('slo-floor-ms') === undefined ? run.sloFloorMs : Number(v('slo-floor-ms'));
  if (!(run.sloFloorMs >= 0)) throw new UsageError('--slo-floor-ms must be ≥ 0');
  setup.prefillTokensPerMs = positive('--prefill-tokens-per-ms', v('prefill-tokens-per-ms'));
  const sloToRouter = v('slo-to-router') ?? (setup.sloToRouter ? 'on' : 'off');
  if (sloToRouter !== 'on' && sloToRouter !== 'off') throw new UsageError('--slo-to-router must be on or off');
  setup.sloToRouter = sloToRouter === 'on';
  const faults = v('faults');
  let faultNames: FaultName[] | null = null;
  if (faults !== undefined) {
    faultNames = faults === 'all' ? [...FAULT_NAMES] : (faults.split(',') as FaultName[]);
    for (const f of faultNames) if (!(FAULT_NAMES as readonly string[]).includes(f)) throw new UsageError(`unknown fault ${f} (one of ${FAULT_NAMES.join(', ')})`);
    if (setup.view !== 'relay') throw new UsageError('faults need the relay view');
  }
  return { setup, policies: v('policies') ? parsePolicies(v('policies')!) : [...POLICY_NAMES], faults: faultNames, out: v('out') ?? DEFAULT_OUT, from: (values.from as string[] | undefined) ?? [], records: values.records === true };
}

export function describeSetup(setup: Setup): string {
  const d = setup.dcs.map((x) => `${x.name} ${x.ranks} ranks at ${x.oneWayMs} ms`).join(', ');
  return (
    `${setup.workload === 'trace' ? `Mooncake trace (${setup.run.tracePath})` : 'synthetic multi-tenant workload'}; ${setup.run.requests} requests per run, first ${setup.run.warmup} not measured; ` +
    `${d}; each rank ${LLAMA3_8B_A100.name}, ${setup.engine.kvCapacityTokens} KV tokens, max_num_seqs ${setup.engine.maxNumSeqs}, max_num_batched_tokens ${setup.engine.maxBatchedTokens}; ` +
    `100 % load = ${setup.workload === 'trace' ? "each window's own capacity (capacity.ts, per run in sweep.json)" : 'the capacity on this mix (capacity.ts)'}; ${setup.view} view, ${setup.routers} router(s); TTFT SLO max(${setup.run.sloFloorMs} ms, ${setup.run.sloScale} × unloaded prefill + RTT)`
  );
}

export async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let cli: Cli;
  try {
    cli = parseCli(argv);
  } catch (err) {
    if (!(err instanceof UsageError || err instanceof TypeError)) throw err;
    process.stderr.write(`sim:multidc: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const { setup, policies, out } = cli;
  if (cli.from.length > 0) {
    const parts = cli.from.map((file) => ({ file, ...(JSON.parse(fs.readFileSync(file, 'utf8')) as { command: string; setup: string; runs: RunResult[] }) }));
    let runs: RunResult[];
    try {
      runs = mergeSweeps(parts);
    } catch (err) {
      process.stderr.write(`sim:multidc: ${(err as Error).message}\n`);
      return 2;
    }
    fs.mkdirSync(out, { recursive: true });
    writeReport(out, [...new Set(parts.map((p) => p.command))].join('\n'), parts[0].setup, runs);
    return 0;
  }
  const workload = Workload.load(setup);
  const described = describeSetup(setup);
  fs.mkdirSync(out, { recursive: true });
  process.stderr.write(`${described}\n`);
  const command = `npm run sim:multidc -- ${argv.join(' ')}`.trim();
  if (cli.faults) {
    const results = await runFaults(workload, cli.faults, { policies, load: setup.run.loads[0], seed: setup.run.seeds[0] }, (line) => process.stderr.write(`${line}\n`));
    fs.writeFileSync(path.join(out, 'faults.json'), `${JSON.stringify({ command, setup: described, results }, null, 2)}\n`);
    fs.writeFileSync(path.join(out, 'faults.md'), `# Fault scenarios\n\n\`${command}\`\n\n${described}.\n\n${faultsTable(results)}`);
    process.stdout.write(`${faultsTable(results)}\nwritten to ${out}/faults.{json,md}\n`);
    return 0;
  }
  const runs: RunResult[] = [];
  const write = () => {
    const aggregates = aggregate(runs);
    const v = verdicts(aggregates, OURS, runs);
    fs.writeFileSync(path.join(out, 'sweep.json'), `${JSON.stringify({ command, setup: described, calibration: CALIBRATION_SOURCES, runs, aggregates, verdicts: v }, null, 2)}\n`);
    return { aggregates, v };
  };
  await sweep(workload, { policies, loads: setup.run.loads, seeds: setup.run.seeds }, (r, records) => {
    runs.push(r);
    if (cli.records) {
      const measured = [...records].sort((a, b) => a.arrivalMs - b.arrivalMs).slice(setup.run.warmup);
      const withSlo = measured.map((m) => ({ ...m, sloMs: sloMs(setup, m.inputTokens) }));
      fs.writeFileSync(path.join(out, `records-${r.policy}-${r.load}-${r.seed}.json`), `${JSON.stringify(withSlo)}\n`);
    }
    const s = r.summary;
    process.stderr.write(
      `load ${r.load} seed ${r.seed} ${r.policy}: goodput ${s.goodputPerS.toFixed(2)}/s, SLO ${(100 * s.sloAttainment).toFixed(1)} %, hit ${(100 * s.hitRate).toFixed(1)} %, ` +
        `TTFT p50 ${s.ttftMs.p50.toFixed(0)} ms, late p99 ${s.lateMsP99.toFixed(0)} ms (${r.wallSeconds.toFixed(0)} s)\n`,
    );
    write();
  });
  write();
  writeReport(out, command, described, runs);
  return 0;
}

/** sweep.md and sweep.svg from the runs (and sweep.json with the aggregates and verdicts); `command` may list several (merged pieces). */
function writeReport(out: string, command: string, described: string, runs: readonly RunResult[]): void {
  const aggregates = aggregate(runs);
  const v = verdicts(aggregates, OURS, runs);
  fs.writeFileSync(path.join(out, 'sweep.json'), `${JSON.stringify({ command, setup: described, calibration: CALIBRATION_SOURCES, runs, aggregates, verdicts: v }, null, 2)}\n`);
  const table = sweepTable(aggregates, OURS);
  const verdict = `${verdictTable(v)}\n${pairedTables(v, OURS)}`;
  const commands = command.split('\n').map((c) => `\`${c}\``).join('  \n');
  const windows = new Set(runs.map((r) => r.seed)).size;
  const capacities = [...new Map(runs.map((r) => [r.seed, r.capacityPerS])).entries()].sort((a, b) => a[0] - b[0]);
  const perWindow = `100 % load per window (seed: req/s): ${capacities.map(([seed, c]) => `${seed}: ${c.toFixed(2)}`).join(', ')}.`;
  fs.writeFileSync(path.join(out, 'sweep.md'), `# Load sweep\n\n${commands}\n\n${described}.\n\n${perWindow}\n\n${table}\n## Verdict (${OURS})\n\n${verdict}\n![plot](sweep.svg)\n`);
  const subtitle = `Mooncake trace, 3 DCs (4+2+2 ranks of Llama-3.1-8B on A100), ${runs[0]?.view === 'oracle' ? 'exact-view' : 'relay-fed'} routers; mean and 95 % CI over ${windows} windows`;
  fs.writeFileSync(path.join(out, 'sweep.svg'), sweepSvg(aggregates, OURS, subtitle, v));
  process.stdout.write(`${table}\n${verdict}\nwritten to ${out}/sweep.{json,md,svg}\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`sim:multidc: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}
