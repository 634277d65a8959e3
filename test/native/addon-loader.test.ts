// The addon loader: a source checkout loads its own builds; a package with neither a build nor a
// prebuild for this platform fails with one line naming every candidate and why it was refused;
// a prebuild alone is taken when no build exists; KV_DC_RELAY_BUILD_DIR names another build
// directory (npm run test:asan runs these tests against build-asan/). A refused file's cause is the
// real one: a missing shared library, a file that is not an addon, another architecture, another
// Node.js ABI or Node-API version. The relay addon binds to the libzmq that zeromq.js carries.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { addonOrigins, explainLoadFailure } from '../../src/native';
import { zmqLibrary } from '../../src/native/zmq-subscriber';
import { ROOT } from '../support/cli-process';

const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');
const BUILD_DIR = process.env.KV_DC_RELAY_BUILD_DIR ?? 'build';
const BUILT = {
  core: path.join(ROOT, BUILD_DIR, 'Release', 'kv_dc_relay_core.node'),
  relay: path.join(ROOT, BUILD_DIR, 'Release', 'kv_dc_relay.node'),
};
const PREBUILD_DIR = path.join('prebuilds', `${process.platform}-${process.arch}`);

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

function withPackage(body: (pkg: string) => void): void {
  const pkg = loaderPackage();
  try {
    body(pkg);
  } finally {
    fs.rmSync(pkg, { recursive: true, force: true });
  }
}

/** Loads addon `name` through the package's loader in a child node; prints its origin. */
function loadIn(pkg: string, name: 'core' | 'relay', env: NodeJS.ProcessEnv = process.env): { status: number | null; stdout: string; stderr: string } {
  const script = `const a = require(${JSON.stringify(path.join(pkg, 'src', 'native', 'addon.ts'))});
try { a.${name}Addon(); } catch (e) { console.error(e.message); process.exit(1); }
console.log(JSON.stringify(a.addonOrigins().${name}));`;
  return spawnSync(process.execPath, ['-r', HOOK, '-e', script], { encoding: 'utf8', env });
}

/** Places `file` (or text) as the package's build of the relay addon. */
function placeBuild(pkg: string, content: { copy: string } | { text: string }): string {
  const build = path.join(pkg, BUILD_DIR, 'Release', 'kv_dc_relay.node');
  fs.mkdirSync(path.dirname(build), { recursive: true });
  if ('copy' in content) fs.copyFileSync(content.copy, build);
  else fs.writeFileSync(build, content.text);
  return build;
}

/** Compiles C `source` into a shared object at `out` (the test machine builds the addon: it has cc). */
function compileShared(dir: string, source: string, out: string, extra: string[] = []): void {
  const file = path.join(dir, `${path.basename(out)}.c`);
  fs.writeFileSync(file, source);
  const result = spawnSync('cc', ['-shared', '-fPIC', '-o', out, file, ...extra], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`cc failed: ${result.stderr}`);
}

test('a source checkout loads its own builds of both addons', () => {
  expect(addonOrigins()).toEqual({ core: { kind: 'local-build', path: BUILT.core }, relay: { kind: 'local-build', path: BUILT.relay } });
});

test('with neither a build nor a prebuild, one line names each candidate and why', () => {
  withPackage((pkg) => {
    const result = loadIn(pkg, 'relay');
    expect(result.status).not.toBe(0);
    const line = result.stderr.split('\n').find((l) => l.includes('cannot load'));
    expect(line).toContain(`kv-dc-relay: cannot load kv_dc_relay.node for ${process.platform}-${process.arch}`);
    expect(line).toContain(`local-build ${path.join(pkg, BUILD_DIR, 'Release', 'kv_dc_relay.node')}: not present`);
    expect(line).toContain(`prebuild ${path.join(pkg, PREBUILD_DIR, 'kv_dc_relay.node')}: not present`);
    expect(line).toContain('--build-from-source');
  });
});

test('an unloadable build is skipped and the prebuild is taken', () => {
  withPackage((pkg) => {
    placeBuild(pkg, { text: 'not a shared object' });
    const prebuild = path.join(pkg, PREBUILD_DIR, 'kv_dc_relay.node');
    fs.mkdirSync(path.dirname(prebuild), { recursive: true });
    fs.copyFileSync(BUILT.relay, prebuild);
    const result = loadIn(pkg, 'relay');
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ kind: 'prebuild', path: prebuild });
  });
});

test('KV_DC_RELAY_BUILD_DIR names the build directory the loader takes', () => {
  withPackage((pkg) => {
    const other = path.join(pkg, 'other-build', 'Release', 'kv_dc_relay_core.node');
    fs.mkdirSync(path.dirname(other), { recursive: true });
    fs.copyFileSync(BUILT.core, other);
    const result = loadIn(pkg, 'core', { ...process.env, KV_DC_RELAY_BUILD_DIR: 'other-build' });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ kind: 'local-build', path: other });
  });
});

describe('a refused file names the real cause', () => {
  const refusal = (pkg: string): string => {
    const result = loadIn(pkg, 'relay');
    expect(result.status).not.toBe(0);
    const line = result.stderr.split('\n').find((l) => l.includes('cannot load')) ?? '';
    const build = path.join(pkg, BUILD_DIR, 'Release', 'kv_dc_relay.node');
    return line.slice(line.indexOf(`local-build ${build}: `) + `local-build ${build}: `.length).split('; prebuild')[0];
  };

  test('a shared library it was linked against is missing', () => {
    withPackage((pkg) => {
      compileShared(pkg, 'int kv_missing_f(void) { return 1; }', path.join(pkg, 'libkvmissing.so'));
      const build = placeBuild(pkg, { text: '' });
      compileShared(pkg, 'int kv_missing_f(void); int g(void) { return kv_missing_f(); }', build, [`-L${pkg}`, '-lkvmissing']);
      fs.rmSync(path.join(pkg, 'libkvmissing.so'));
      expect(refusal(pkg)).toMatch(/^missing shared library libkvmissing\.so \(/);
    });
  });

  test('a file that is not a shared object, and one that registers no module', () => {
    withPackage((pkg) => {
      placeBuild(pkg, { text: 'not a shared object at all, just text' });
      expect(refusal(pkg)).toBe('not a native addon (not an ELF shared object)');
      compileShared(pkg, 'int nothing_here;', placeBuild(pkg, { text: '' }));
      expect(refusal(pkg)).toBe('not a Node.js addon (a shared object that registers no module)');
    });
  });

  test('an addon built for a newer Node-API, and one for another Node.js ABI', () => {
    withPackage((pkg) => {
      // What an addon that calls a Node-API function this node lacks looks like to dlopen.
      const napi = 'extern int napi_function_of_a_newer_node; int* used = &napi_function_of_a_newer_node;';
      compileShared(pkg, napi, placeBuild(pkg, { text: '' }), ['-Wl,--unresolved-symbols=ignore-all']);
      expect(refusal(pkg)).toMatch(/^Node-API mismatch: built for a newer Node-API than Node\.js /);

      const abi = `struct node_module { int v; unsigned flags; void* dso; const char* file; void* reg; void* ctx; const char* name; void* priv; void* link; };
extern void node_module_register(void*);
static struct node_module m = { 1, 0, 0, "abi.c", 0, 0, "abi", 0, 0 };
__attribute__((constructor)) static void init(void) { node_module_register(&m); }`;
      compileShared(pkg, abi, placeBuild(pkg, { text: '' }), ['-Wl,--unresolved-symbols=ignore-all']);
      expect(refusal(pkg)).toBe(`built for another Node.js ABI (NODE_MODULE_VERSION 1; Node.js ${process.versions.node} needs ${process.versions.modules})`);
    });
  });

  test('an addon for another architecture', () => {
    // An ELF header for aarch64 (or x86-64 on an arm64 host): magic, 64-bit, little-endian, e_machine.
    const header = Buffer.alloc(64);
    header.writeUInt32BE(0x7f454c46, 0);
    header[4] = 2;
    header[5] = 1;
    header[6] = 1;
    header.writeUInt16LE(3, 16); // ET_DYN
    header.writeUInt16LE(process.arch === 'arm64' ? 62 : 183, 18);
    withPackage((pkg) => {
      const build = placeBuild(pkg, { text: '' });
      fs.writeFileSync(build, header);
      expect(refusal(pkg)).toBe(`built for ${process.arch === 'arm64' ? 'x64' : 'arm64'}, this host is ${process.arch}`);
    });
  });

  test('explainLoadFailure keeps an unrecognised message as it is', () => {
    expect(explainLoadFailure(BUILT.relay, 'something unexpected\nsecond line')).toBe('something unexpected');
    expect(explainLoadFailure(BUILT.relay, "/lib/libc.so.6: version `GLIBC_2.99' not found (required by x)")).toBe(
      'needs GLIBC_2.99, newer than this host\'s C/C++ runtime',
    );
  });
});

test("ingest binds to zeromq.js's libzmq: one libzmq in the process, none linked by the addons", () => {
  const library = zmqLibrary();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  expect(library.version).toBe((require('zeromq') as { version: string }).version);
  expect(library.path).toContain(`${path.sep}zeromq${path.sep}`);
  const maps = fs.readFileSync('/proc/self/maps', 'utf8');
  expect(maps).not.toMatch(/libzmq\.so/);
  for (const file of Object.values(BUILT)) {
    const needed = spawnSync('readelf', ['-d', file], { encoding: 'utf8' }).stdout;
    expect(needed).toContain('(NEEDED)');
    expect(needed).not.toMatch(/libzmq|libsodium/);
  }
});

test('a relay addon loaded without zeromq.js says so instead of crashing (ENOLIBZMQ)', () => {
  const script = `const addon = require(${JSON.stringify(BUILT.relay)});
try { addon.zmqLibrary(); console.log('bound'); } catch (e) { console.log(e.code + ' ' + e.message); }
try { new addon.ZmqSubscriber({ receiveHighWaterMark: 1, maxMessageSize: 1, maxSockets: 16 }, () => {}, () => {}); } catch (e) { console.log(e.code); }`;
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  expect(result.status).toBe(0);
  expect(result.stdout.split('\n')).toEqual([expect.stringMatching(/^ENOLIBZMQ no libzmq is loaded in this process/), 'ENOLIBZMQ', '']);
});
