// The addon loader: a source checkout loads its own build; a package with neither a build nor a
// prebuild for this platform fails with an error naming every candidate and why it was refused;
// a prebuild alone is taken when no build exists; KV_DC_RELAY_BUILD_DIR names another build directory
// (npm run test:asan runs these tests against build-asan/).
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { addonOrigin } from '../../src/native';
import { ROOT } from '../support/cli-process';

const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');
const BUILD_DIR = process.env.KV_DC_RELAY_BUILD_DIR ?? 'build';
const BUILT = path.join(ROOT, BUILD_DIR, 'Release', 'kv_dc_relay.node');

/** A minimal package holding just the loader (src/native/addon.ts) and scripts/native-target.js. */
function loaderPackage(): string {
  const pkg = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-loader-'));
  fs.mkdirSync(path.join(pkg, 'src', 'native'), { recursive: true });
  fs.mkdirSync(path.join(pkg, 'scripts'));
  fs.writeFileSync(path.join(pkg, 'package.json'), '{"name":"kv-dc-relay","version":"0.0.0"}');
  fs.copyFileSync(path.join(ROOT, 'src', 'native', 'addon.ts'), path.join(pkg, 'src', 'native', 'addon.ts'));
  fs.copyFileSync(path.join(ROOT, 'scripts', 'native-target.js'), path.join(pkg, 'scripts', 'native-target.js'));
  return pkg;
}

function loadIn(pkg: string, env: NodeJS.ProcessEnv = process.env): { status: number | null; stdout: string; stderr: string } {
  const script = `const a = require(${JSON.stringify(path.join(pkg, 'src', 'native', 'addon.ts'))}); console.log(JSON.stringify(a.addonOrigin));`;
  return spawnSync(process.execPath, ['-r', HOOK, '-e', script], { encoding: 'utf8', env });
}

test('a source checkout loads its own build', () => {
  expect(addonOrigin).toEqual({ kind: 'local-build', path: BUILT });
});

test('with neither a build nor a prebuild, the error names each candidate and why', () => {
  const pkg = loaderPackage();
  try {
    const result = loadIn(pkg);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(`no usable native addon for ${process.platform}-${process.arch}`);
    expect(result.stderr).toContain(`local-build ${path.join(pkg, BUILD_DIR, 'Release', 'kv_dc_relay.node')}: not present`);
    expect(result.stderr).toContain(`prebuild ${path.join(pkg, 'prebuilds', `${process.platform}-${process.arch}`, 'kv_dc_relay.node')}: not present`);
    expect(result.stderr).toContain('--build-from-source');
  } finally {
    fs.rmSync(pkg, { recursive: true, force: true });
  }
});

test('an unloadable build is skipped and the prebuild is taken', () => {
  const pkg = loaderPackage();
  try {
    const build = path.join(pkg, BUILD_DIR, 'Release', 'kv_dc_relay.node');
    fs.mkdirSync(path.dirname(build), { recursive: true });
    fs.writeFileSync(build, 'not a shared object');
    const prebuild = path.join(pkg, 'prebuilds', `${process.platform}-${process.arch}`, 'kv_dc_relay.node');
    fs.mkdirSync(path.dirname(prebuild), { recursive: true });
    fs.copyFileSync(BUILT, prebuild);
    const result = loadIn(pkg);
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ kind: 'prebuild', path: prebuild });
  } finally {
    fs.rmSync(pkg, { recursive: true, force: true });
  }
});

test('KV_DC_RELAY_BUILD_DIR names the build directory the loader takes', () => {
  const pkg = loaderPackage();
  try {
    const other = path.join(pkg, 'other-build', 'Release', 'kv_dc_relay.node');
    fs.mkdirSync(path.dirname(other), { recursive: true });
    fs.copyFileSync(BUILT, other);
    const result = loadIn(pkg, { ...process.env, KV_DC_RELAY_BUILD_DIR: 'other-build' });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ kind: 'local-build', path: other });
  } finally {
    fs.rmSync(pkg, { recursive: true, force: true });
  }
});
