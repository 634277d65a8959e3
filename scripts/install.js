#!/usr/bin/env node
// npm `install` hook. Operators' hosts have no compiler: a matching prebuild is used as is and
// nothing is compiled. Without one (or when asked to build from source) cmake-js builds the addon.
'use strict';
const fs = require('fs');
const path = require('path');
const target = require('./native-target');

const root = path.resolve(__dirname, '..');
// `npm install --build-from-source` (every native dependency, zeromq's included, then compiles) or
// KV_DC_RELAY_BUILD_FROM_SOURCE=1 (this package only).
const truthy = (value) => value !== undefined && value !== '' && value !== 'false' && value !== '0';
const fromSource =
  process.argv.includes('--build-from-source') ||
  truthy(process.env.KV_DC_RELAY_BUILD_FROM_SOURCE) ||
  truthy(process.env.npm_config_build_from_source);

// A source checkout (tsconfig.json present) always compiles its own sources: a prebuild left there
// by `npm run prebuild` may be older than them.
const sourceCheckout = fs.existsSync(path.join(root, 'tsconfig.json'));
const prebuild = target.prebuildPath(root);
if (!fromSource && !sourceCheckout && fs.existsSync(prebuild)) {
  console.log(`kv-dc-relay install: using prebuilt addon ${path.relative(root, prebuild)}; nothing compiled`);
} else {
  console.log(
    fromSource
      ? 'kv-dc-relay install: building from source as asked: compiling the addon with cmake-js'
      : sourceCheckout
        ? 'kv-dc-relay install: source checkout: compiling the addon with cmake-js'
        : `kv-dc-relay install: no prebuild for ${process.platform}-${process.arch}: compiling the addon with cmake-js`,
  );
  const status = target.compileAddon(root);
  if (status !== 0) {
    console.error('kv-dc-relay install: compiling the addon with cmake-js failed');
    process.exit(status);
  }
}

if (sourceCheckout) {
  const status = require('./build-ts').buildTypeScript();
  if (status !== 0) {
    console.error('kv-dc-relay install: compiling the TypeScript failed');
    process.exit(status);
  }
}
