// Where the compiled addons live and how they are built: one definition shared by the install script,
// the build scripts and the runtime loader (src/native/addon.ts).
'use strict';
const path = require('path');
const { spawnSync } = require('child_process');

// The two product addons (native/bindings/<name>/addon.cc): `core` is what a consumer loads
// (hashing, CKF, CBI1), `relay` what only the relay runs (pool state, ingest).
const ADDON_FILES = { core: 'kv_dc_relay_core.node', relay: 'kv_dc_relay.node' };
// Vector-only and bench-only entry points (native/testing/): built beside the addons, never packaged.
const TESTING_ADDON_FILE = 'kv_dc_relay_testing.node';

// The from-source build directory: build/, or the one KV_DC_RELAY_BUILD_DIR names (relative to the
// package root), so `npm run test:asan` loads the sanitizer build in build-asan/.
function buildDir(root) {
  return path.join(root, process.env.KV_DC_RELAY_BUILD_DIR || 'build');
}

function prebuildDir(root, platform = process.platform, arch = process.arch) {
  return path.join(root, 'prebuilds', `${platform}-${arch}`);
}

function addonFile(name) {
  const file = ADDON_FILES[name];
  if (!file) throw new Error(`unknown addon '${name}' (one of ${Object.keys(ADDON_FILES).join(', ')})`);
  return file;
}

/** Absolute path of an installed package's bin script (run with node, no shell). */
function packageBin(root, pkg, name = pkg) {
  const pkgJson = require.resolve(`${pkg}/package.json`, { paths: [root] });
  const binField = require(pkgJson).bin;
  return path.join(path.dirname(pkgJson), typeof binField === 'string' ? binField : binField[name]);
}

/** Runs an installed package's bin script with node in `root`; returns its exit status. */
function runPackageBin(root, pkg, args, name = pkg) {
  const result = spawnSync(process.execPath, [packageBin(root, pkg, name), ...args], { cwd: root, stdio: 'inherit' });
  return result.status ?? 1;
}

/** Compiles the addons into build/Release with cmake-js and stamps their inputs; returns the exit status. */
function compileAddon(root) {
  const status = runPackageBin(root, 'cmake-js', ['compile', '--out', 'build']);
  if (status === 0) require('./build-inputs').markBuilt(root, require('./build-inputs').NATIVE);
  return status;
}

module.exports = {
  packageBin,
  runPackageBin,
  compileAddon,
  ADDON_FILES,
  localBuildPath: (root, name = 'relay') => path.join(buildDir(root), 'Release', addonFile(name)),
  testingBuildPath: (root) => path.join(buildDir(root), 'Release', TESTING_ADDON_FILE),
  prebuildPath: (root, name = 'relay', platform, arch) => path.join(prebuildDir(root, platform, arch), addonFile(name)),
  prebuildDir,
};
