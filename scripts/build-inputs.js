// What each build step reads, digested: the install script skips a step whose inputs have not
// changed since it last succeeded (a stamp beside its output), so `npm ci`/`npm install` in an
// up-to-date source checkout compiles nothing.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

/** Every file under `dir` (sorted, relative), skipping nothing: inputs are small trees. */
function filesUnder(root, rel) {
  const full = path.join(root, rel);
  if (!fs.existsSync(full)) return [];
  if (!fs.statSync(full).isDirectory()) return [rel];
  return fs
    .readdirSync(full)
    .sort()
    .flatMap((name) => filesUnder(root, path.join(rel, name)));
}

// The native build: sources, the CMake file, the header packages' versions, and the node it builds for.
// (compileAddon() always builds into build/.)
const NATIVE = {
  stamp: (root) => path.join(root, 'build', '.kv-dc-relay-inputs'),
  outputs: (root) => Object.values(require('./native-target').ADDON_FILES).map((file) => path.join(root, 'build', 'Release', file)),
  inputs: ['CMakeLists.txt', 'native', 'node_modules/node-addon-api/package.json', 'node_modules/xxhash-addon/package.json'],
  extra: () => `${process.version} ${process.arch} napi ${process.versions.napi}`,
};
// The TypeScript build into dist/.
const TYPESCRIPT = {
  stamp: (root) => path.join(root, 'dist', '.kv-dc-relay-inputs'),
  outputs: (root) => [path.join(root, 'dist', 'src', 'cli', 'main.js'), path.join(root, 'dist', 'binding.d.ts')],
  inputs: ['tsconfig.json', 'binding.d.ts', 'src', 'bench', 'examples', 'node_modules/typescript/package.json'],
  extra: () => '',
};

function digest(root, step) {
  const hash = crypto.createHash('sha256').update(step.extra());
  for (const rel of step.inputs.flatMap((input) => filesUnder(root, input))) {
    hash.update(`${rel}\0`).update(fs.readFileSync(path.join(root, rel))).update('\0');
  }
  return hash.digest('hex');
}

/** True when `step`'s outputs are there and were built from exactly the inputs there are now. */
function upToDate(root, step) {
  const stamp = step.stamp(root);
  if (!fs.existsSync(stamp) || !step.outputs(root).every((file) => fs.existsSync(file))) return false;
  return fs.readFileSync(stamp, 'utf8') === digest(root, step);
}

/** Records that `step` just succeeded on the current inputs. */
function markBuilt(root, step) {
  fs.mkdirSync(path.dirname(step.stamp(root)), { recursive: true });
  fs.writeFileSync(step.stamp(root), digest(root, step));
}

module.exports = { NATIVE, TYPESCRIPT, upToDate, markBuilt };
