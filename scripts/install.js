#!/usr/bin/env node
// npm `install` hook. Operators' hosts have no compiler: a matching prebuild is used as is and
// nothing is compiled. Without one (or when asked to build from source) cmake-js builds the addons.
// In a source checkout it builds the addons and dist/, each only when its inputs changed since its
// last build (scripts/build-inputs.js), and never when npm runs it for `npm exec`/`npx`: a command
// run beside a live relay must not rewrite the files that relay runs.
'use strict';
const fs = require('fs');
const path = require('path');
const target = require('./native-target');
const { NATIVE, TYPESCRIPT, upToDate } = require('./build-inputs');

const root = path.resolve(__dirname, '..');
// `npm install --build-from-source` (every native dependency, zeromq's included, then compiles) or
// KV_DC_RELAY_BUILD_FROM_SOURCE=1 (this package only).
const truthy = (value) => value !== undefined && value !== '' && value !== 'false' && value !== '0';
const fromSource =
  process.argv.includes('--build-from-source') ||
  truthy(process.env.KV_DC_RELAY_BUILD_FROM_SOURCE) ||
  truthy(process.env.npm_config_build_from_source);

function fail(what, status) {
  console.error(`kv-dc-relay install: ${what} failed`);
  process.exit(status);
}

// A source checkout (tsconfig.json present) always compiles its own sources: a prebuild left there
// by `npm run prebuild` may be older than them.
const sourceCheckout = fs.existsSync(path.join(root, 'tsconfig.json'));

if (process.env.npm_command === 'exec') {
  if (sourceCheckout && !(upToDate(root, NATIVE) && upToDate(root, TYPESCRIPT))) {
    console.log('kv-dc-relay install: run for npm exec; the build is not current, run `npm run build`');
  }
  process.exit(0);
}

const prebuilt = Object.keys(target.ADDON_FILES).every((name) => fs.existsSync(target.prebuildPath(root, name)));
if (!fromSource && !sourceCheckout && prebuilt) {
  console.log(`kv-dc-relay install: using the prebuilt addons in ${path.relative(root, target.prebuildDir(root))}; nothing compiled`);
} else if (!fromSource && sourceCheckout && upToDate(root, NATIVE)) {
  console.log('kv-dc-relay install: source checkout: the addons are current; nothing compiled');
} else {
  console.log(
    fromSource
      ? 'kv-dc-relay install: building from source as asked: compiling the addons with cmake-js'
      : sourceCheckout
        ? 'kv-dc-relay install: source checkout: compiling the addons with cmake-js'
        : `kv-dc-relay install: no prebuild for ${process.platform}-${process.arch}: compiling the addons with cmake-js`,
  );
  const status = target.compileAddon(root);
  if (status !== 0) fail('compiling the addons with cmake-js', status);
}

if (sourceCheckout) {
  if (upToDate(root, TYPESCRIPT)) {
    console.log('kv-dc-relay install: dist/ is current; nothing compiled');
  } else {
    const status = require('./build-ts').buildTypeScript();
    if (status !== 0) fail('compiling the TypeScript', status);
  }
}
