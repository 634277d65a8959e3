// No surprise rebuilds: the install script compiles nothing in a source checkout whose addons and
// dist/ were built from the current sources, and nothing at all when npm runs it for `npm exec`/`npx`
// (it only says the build is stale); the build stamps follow every input.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ROOT } from './staged-package';

interface Step {
  stamp(root: string): string;
  outputs(root: string): string[];
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const inputs = require(path.join(ROOT, 'scripts', 'build-inputs.js')) as {
  NATIVE: Step;
  TYPESCRIPT: Step;
  upToDate(root: string, step: Step): boolean;
  markBuilt(root: string, step: Step): void;
};

function install(env: NodeJS.ProcessEnv): { status: number | null; stdout: string } {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'install.js')], { cwd: ROOT, env, encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout };
}

const outputs = (): string[] => [...inputs.NATIVE.outputs(ROOT), ...inputs.TYPESCRIPT.outputs(ROOT)];
const mtimes = (): number[] => outputs().map((f) => fs.statSync(f).mtimeMs);
const cleanEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  for (const key of ['npm_command', 'KV_DC_RELAY_BUILD_FROM_SOURCE', 'npm_config_build_from_source']) delete env[key];
  return env;
};

test('run for npm exec, a stale checkout is left as it is, with a hint', () => {
  const stamp = inputs.TYPESCRIPT.stamp(ROOT);
  const saved = fs.readFileSync(stamp, 'utf8');
  const before = mtimes();
  fs.writeFileSync(stamp, 'stale');
  try {
    const result = install({ ...cleanEnv(), npm_command: 'exec' });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('kv-dc-relay install: run for npm exec; the build is not current, run `npm run build`\n');
    expect(mtimes()).toEqual(before);
  } finally {
    fs.writeFileSync(stamp, saved);
  }
});

test('an up-to-date source checkout compiles nothing', () => {
  // After `npm ci` (CI) the checkout is current; a developer's edited tree is not, and rebuilding it
  // here would rewrite files other tests run: then only the exec path above is checked.
  if (!(inputs.upToDate(ROOT, inputs.NATIVE) && inputs.upToDate(ROOT, inputs.TYPESCRIPT))) {
    console.warn('install-script: the checkout is not built from its current sources; skipping the no-op check');
    return;
  }
  const before = mtimes();
  const started = Date.now();
  const result = install(cleanEnv());
  expect(result.status).toBe(0);
  expect(result.stdout).toBe(
    'kv-dc-relay install: source checkout: the addons are current; nothing compiled\nkv-dc-relay install: dist/ is current; nothing compiled\n',
  );
  expect(Date.now() - started).toBeLessThan(10_000);
  expect(mtimes()).toEqual(before);
});

test('the stamps follow every input: a change to a source, the CMake file or a header package', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-stamps-'));
  try {
    const write = (rel: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, rel), text);
    };
    for (const rel of ['CMakeLists.txt', 'native/core/a.cc', 'node_modules/node-addon-api/package.json', 'node_modules/xxhash-addon/package.json']) write(rel, rel);
    for (const rel of ['tsconfig.json', 'binding.d.ts', 'src/a.ts', 'node_modules/typescript/package.json']) write(rel, rel);
    for (const out of [...inputs.NATIVE.outputs(dir), ...inputs.TYPESCRIPT.outputs(dir)]) write(path.relative(dir, out), 'built');
    expect(inputs.upToDate(dir, inputs.NATIVE)).toBe(false);
    inputs.markBuilt(dir, inputs.NATIVE);
    inputs.markBuilt(dir, inputs.TYPESCRIPT);
    expect([inputs.upToDate(dir, inputs.NATIVE), inputs.upToDate(dir, inputs.TYPESCRIPT)]).toEqual([true, true]);

    write('native/core/a.cc', 'changed');
    expect([inputs.upToDate(dir, inputs.NATIVE), inputs.upToDate(dir, inputs.TYPESCRIPT)]).toEqual([false, true]);
    inputs.markBuilt(dir, inputs.NATIVE);
    write('native/pool/new.h', 'added');
    expect(inputs.upToDate(dir, inputs.NATIVE)).toBe(false);
    inputs.markBuilt(dir, inputs.NATIVE);
    write('node_modules/node-addon-api/package.json', 'a new version');
    expect(inputs.upToDate(dir, inputs.NATIVE)).toBe(false);
    inputs.markBuilt(dir, inputs.NATIVE);

    write('src/a.ts', 'changed');
    expect([inputs.upToDate(dir, inputs.NATIVE), inputs.upToDate(dir, inputs.TYPESCRIPT)]).toEqual([true, false]);
    inputs.markBuilt(dir, inputs.TYPESCRIPT);
    fs.rmSync(inputs.TYPESCRIPT.outputs(dir)[0]);
    expect(inputs.upToDate(dir, inputs.TYPESCRIPT)).toBe(false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
