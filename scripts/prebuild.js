#!/usr/bin/env node
// `npm run prebuild`: compile the addon for this host and place it under
// prebuilds/<platform>-<arch>/, where `npm pack` picks it up and the loader finds it.
'use strict';
const fs = require('fs');
const path = require('path');
const target = require('./native-target');

const root = path.resolve(__dirname, '..');
const status = target.compileAddon(root);
if (status !== 0) process.exit(status);

fs.mkdirSync(target.prebuildDir(root), { recursive: true });
fs.copyFileSync(target.localBuildPath(root), target.prebuildPath(root));
console.log(`prebuild: wrote ${path.relative(root, target.prebuildPath(root))}`);
