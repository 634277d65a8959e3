#!/usr/bin/env node
// `npm run prebuild`: compile the addons for this host and place them under
// prebuilds/<platform>-<arch>/, where `npm pack` picks them up and the loader finds them.
'use strict';
const fs = require('fs');
const path = require('path');
const target = require('./native-target');

const root = path.resolve(__dirname, '..');
const status = target.compileAddon(root);
if (status !== 0) process.exit(status);

fs.mkdirSync(target.prebuildDir(root), { recursive: true });
for (const name of Object.keys(target.ADDON_FILES)) {
  fs.copyFileSync(target.localBuildPath(root, name), target.prebuildPath(root, name));
  console.log(`prebuild: wrote ${path.relative(root, target.prebuildPath(root, name))}`);
}
