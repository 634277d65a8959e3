#!/usr/bin/env node
// Compiles the TypeScript into dist/ and places binding.d.ts beside it, where the emitted
// declarations of src/native/ import the addon's types from (tsc emits no .d.ts inputs).
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { packageBin } = require('./native-target');

const root = path.resolve(__dirname, '..');

function buildTypeScript() {
  const result = spawnSync(process.execPath, [packageBin(root, 'typescript', 'tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) return result.status ?? 1;
  fs.copyFileSync(path.join(root, 'binding.d.ts'), path.join(root, 'dist', 'binding.d.ts'));
  return 0;
}

module.exports = { buildTypeScript };

if (require.main === module) process.exit(buildTypeScript());
