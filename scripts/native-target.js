// Where the compiled addon lives: one definition shared by the install script, the prebuild
// script and the runtime loader (src/native/addon.ts).
'use strict';
const path = require('path');

const ADDON_FILE = 'kv_dc_relay.node';

function prebuildDir(root, platform = process.platform, arch = process.arch) {
  return path.join(root, 'prebuilds', `${platform}-${arch}`);
}

/** Absolute path of an installed package's bin script (run with node, no shell). */
function packageBin(root, pkg, name = pkg) {
  const pkgJson = require.resolve(`${pkg}/package.json`, { paths: [root] });
  const binField = require(pkgJson).bin;
  return path.join(path.dirname(pkgJson), typeof binField === 'string' ? binField : binField[name]);
}

module.exports = {
  packageBin,
  ADDON_FILE,
  localBuildPath: (root) => path.join(root, 'build', 'Release', ADDON_FILE),
  prebuildPath: (root, platform, arch) => path.join(prebuildDir(root, platform, arch), ADDON_FILE),
  prebuildDir,
};
