#!/usr/bin/env node
// Compiles the TypeScript into dist/ and places binding.d.ts beside it, where the emitted
// declarations of src/native/ import the addon's types from (tsc emits no .d.ts inputs).
'use strict';
const fs = require('fs');
const path = require('path');
const { runPackageBin } = require('./native-target');
const { TYPESCRIPT, markBuilt, upToDate } = require('./build-inputs');

const root = path.resolve(__dirname, '..');

function buildTypeScript() {
  const status = runPackageBin(root, 'typescript', ['-p', 'tsconfig.json'], 'tsc');
  if (status !== 0) return status;
  fs.copyFileSync(path.join(root, 'binding.d.ts'), path.join(root, 'dist', 'binding.d.ts'));
  markBuilt(root, TYPESCRIPT);
  return 0;
}

module.exports = { buildTypeScript };

// `--if-changed` (npm's prepack): skip when dist/ was built from exactly the current sources.
if (require.main === module) {
  if (process.argv.includes('--if-changed') && upToDate(root, TYPESCRIPT)) {
    // stderr: under `npm pack --json` a lifecycle script's stdout lands in the JSON on stdout.
    console.error('build-ts: dist/ is current');
    process.exit(0);
  }
  process.exit(buildTypeScript());
}
