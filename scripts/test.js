#!/usr/bin/env node
// npm test [-- jest args]: type-checks, then runs jest in two phases. The chaos tests (test/chaos/)
// measure latency and load the 2-core box to its limit, so they run last, one at a time, with no
// other test file beside them; everything else runs first in parallel workers. With a test path in
// the arguments, jest runs once with them. `--outputFile=F` (with --json) gets one report with the
// two phases' results merged, as a single run would write it.
'use strict';
const fs = require('fs');
const path = require('path');
const { runPackageBin } = require('./native-target');

const root = path.resolve(__dirname, '..');
const CHAOS = 'test/chaos/';

function jest(args) {
  return runPackageBin(root, 'jest', args);
}

/** The phases' --json reports as one: counts summed, results concatenated. */
function mergeReports(files, into) {
  const reports = files.filter((f) => fs.existsSync(f)).map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
  if (reports.length === 0) return; // no report at all: the caller sees none, as after a crashed jest
  const merged = { ...reports[0], testResults: [] };
  for (const key of Object.keys(merged)) {
    if (key.startsWith('num')) merged[key] = reports.reduce((sum, r) => sum + (r[key] ?? 0), 0);
  }
  merged.success = reports.length === files.length && reports.every((r) => r.success);
  merged.startTime = Math.min(...reports.map((r) => r.startTime));
  for (const r of reports) merged.testResults.push(...r.testResults);
  fs.writeFileSync(into, JSON.stringify(merged));
  for (const f of files) fs.rmSync(f, { force: true });
}

function main() {
  const typecheck = runPackageBin(root, 'typescript', ['-p', 'tsconfig.test.json'], 'tsc');
  if (typecheck !== 0) return typecheck;
  const args = process.argv.slice(2);
  if (args.some((a) => !a.startsWith('-'))) return jest(args);

  const output = args.find((a) => a.startsWith('--outputFile='));
  const rest = args.filter((a) => a !== output);
  const outputFile = output && path.resolve(root, output.slice('--outputFile='.length));
  const phaseOutput = (name) => (outputFile ? [`--outputFile=${outputFile}.${name}`] : []);
  const parallel = jest([...rest, ...phaseOutput('parallel'), `--testPathIgnorePatterns=/${CHAOS}`]);
  const chaos = jest([...rest, ...phaseOutput('chaos'), '--runInBand', CHAOS]);
  if (outputFile) mergeReports([`${outputFile}.parallel`, `${outputFile}.chaos`], outputFile);
  return parallel !== 0 ? parallel : chaos;
}

process.exit(main());
