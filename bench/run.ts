// Runs benchmark modules and prints their results.
//   node dist/bench/run.js [--markdown] [module ...]
// Modules are bench/<name>.ts files exporting `run(): Promise<BenchResult[]>`; without names,
// every such module in this folder runs. --markdown prints rows for BENCHMARKS.md.
// Each module runs in a fresh process, so one module's heap, external memory and threads do not
// skew the next one's numbers.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import type { BenchModule, BenchResult } from './support/result';

function available(): string[] {
  return fs
    .readdirSync(__dirname)
    .filter((file) => file.endsWith('.js') && file !== 'run.js')
    .map((file) => file.slice(0, -'.js'.length))
    .sort();
}

function load(name: string): BenchModule | undefined {
  const mod = require(path.join(__dirname, `${name}.js`)) as Partial<BenchModule>;
  return typeof mod.run === 'function' ? (mod as BenchModule) : undefined;
}

// Four significant digits, with thousands separators for large values.
function formatNumber(value: number): string {
  return Number(value.toPrecision(4)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

function formatValue(value: number, unit: string): string {
  return `${formatNumber(value)} ${unit}`;
}

function markdownRow(module: string, r: BenchResult): string {
  const baseline = r.baseline ? `${r.baseline.name}: ${formatValue(r.baseline.value, r.unit)}` : '';
  const ratio = r.ratio === undefined ? '' : formatNumber(r.ratio);
  return `| ${module} | ${r.name} | ${formatValue(r.value, r.unit)} | ${baseline} | ${ratio} | ${r.note ?? ''} |`;
}

function printTable(rows: [string, BenchResult][]): void {
  const cells = rows.map(([module, r]) => [
    module,
    r.name,
    formatValue(r.value, r.unit),
    r.baseline ? `${formatValue(r.baseline.value, r.unit)} (${r.baseline.name})` : '',
    r.ratio === undefined ? '' : `x${formatNumber(r.ratio)}`,
    r.note ?? '',
  ]);
  const header = ['module', 'benchmark', 'value', 'baseline', 'ratio', 'note'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]): string => c.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd();
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const c of cells) console.log(line(c));
}

const CHILD_FLAG = '--child';

/** In the child process: run one module and print its results as JSON on stdout. */
async function runChild(name: string): Promise<number> {
  const mod = load(name);
  if (!mod) return 2;
  process.stdout.write(JSON.stringify(await mod.run()));
  return 0;
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === CHILD_FLAG) return runChild(argv[1]);
  const markdown = argv.includes('--markdown');
  const requested = argv.filter((arg) => !arg.startsWith('--'));
  const known = available();
  const unknown = requested.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    console.error(`unknown bench module(s): ${unknown.join(', ')} (available: ${known.join(', ')})`);
    return 2;
  }
  const rows: [string, BenchResult][] = [];
  for (const name of requested.length > 0 ? requested : known) {
    const mod = load(name);
    if (!mod) {
      if (requested.includes(name)) {
        console.error(`bench/${name} does not export run()`);
        return 2;
      }
      continue;
    }
    console.error(`running ${name} ...`);
    const child = spawnSync(process.execPath, [__filename, CHILD_FLAG, name], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    if (child.status !== 0) {
      console.error(`bench/${name} failed (exit ${child.status ?? child.signal})`);
      return 1;
    }
    for (const result of JSON.parse(child.stdout) as BenchResult[]) rows.push([name, result]);
  }
  if (markdown) {
    console.log('| module | benchmark | value | baseline | ratio | note |');
    console.log('| --- | --- | --- | --- | --- | --- |');
    for (const [module, r] of rows) console.log(markdownRow(module, r));
  } else {
    printTable(rows);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
