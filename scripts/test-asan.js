// npm run test:asan [-- jest args]: the native tests (test/native by default) against the
// AddressSanitizer + UndefinedBehaviorSanitizer build of `npm run build:asan` (build-asan/).
// node itself is not instrumented, so the ASan runtime is preloaded (LD_PRELOAD of gcc's libasan);
// leak detection is off because node keeps much of its heap alive until exit. Any report aborts the
// process, which fails the run.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync, spawnSync } = require('child_process');
const { packageBin } = require('./native-target');

const root = path.join(__dirname, '..');
const BUILD_DIR = 'build-asan';
const addonPath = path.join(root, BUILD_DIR, 'Release', 'kv_dc_relay.node');
if (!fs.existsSync(addonPath)) {
  console.error(`test:asan: ${addonPath} is missing; run \`npm run build:asan\` first`);
  process.exit(1);
}
// A build without the sanitizers (say, configured before KVRELAY_SANITIZE) would pass for nothing.
const needed = spawnSync('ldd', [addonPath], { encoding: 'utf8' }).stdout || '';
if (!/libasan/.test(needed)) {
  console.error(`test:asan: ${addonPath} is not linked against libasan; rebuild with \`npm run build:asan\``);
  process.exit(1);
}
const libasan = execFileSync('gcc', ['-print-file-name=libasan.so'], { encoding: 'utf8' }).trim();
if (!path.isAbsolute(libasan) || !fs.existsSync(libasan)) {
  console.error(`test:asan: gcc does not know libasan.so (got "${libasan}"); install gcc's sanitizer runtime`);
  process.exit(1);
}
const jestArgs = process.argv.slice(2);
const env = {
  ...process.env,
  KV_DC_RELAY_BUILD_DIR: BUILD_DIR,
  LD_PRELOAD: libasan,
  ASAN_OPTIONS: 'detect_leaks=0:abort_on_error=1:halt_on_error=1',
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
};
console.log(`test:asan: ${addonPath} with LD_PRELOAD=${libasan}`);
const result = spawnSync(
  process.execPath,
  [packageBin(root, 'jest'), '--runInBand', ...(jestArgs.length > 0 ? jestArgs : ['test/native'])],
  { cwd: root, env, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
