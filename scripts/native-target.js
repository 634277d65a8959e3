// Where the compiled addon lives and how it is built: one definition shared by the install script,
// the build scripts and the runtime loader (src/native/addon.ts).
'use strict';
const path = require('path');
const { spawnSync } = require('child_process');

const ADDON_FILE = 'kv_dc_relay.node';
// Vector-only and bench-only entry points (native/testing/): built beside the addon, never packaged.
const TESTING_ADDON_FILE = 'kv_dc_relay_testing.node';

// The from-source build directory: build/, or the one KV_DC_RELAY_BUILD_DIR names (relative to the
// package root), so `npm run test:asan` loads the sanitizer build in build-asan/.
function buildDir(root) {
  return path.join(root, process.env.KV_DC_RELAY_BUILD_DIR || 'build');
}

function prebuildDir(root, platform = process.platform, arch = process.arch) {
  return path.join(root, 'prebuilds', `${platform}-${arch}`);
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

/** Compiles the addon into build/Release with cmake-js; returns the exit status. */
function compileAddon(root) {
  return runPackageBin(root, 'cmake-js', ['compile', '--out', 'build']);
}

module.exports = {
  packageBin,
  runPackageBin,
  compileAddon,
  ADDON_FILE,
  localBuildPath: (root) => path.join(buildDir(root), 'Release', ADDON_FILE),
  testingBuildPath: (root) => path.join(buildDir(root), 'Release', TESTING_ADDON_FILE),
  prebuildPath: (root, platform, arch) => path.join(prebuildDir(root, platform, arch), ADDON_FILE),
  prebuildDir,
};
