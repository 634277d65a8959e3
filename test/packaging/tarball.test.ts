// The operator path: `npm run prebuild`, `npm pack`, then install the tarball on a host without a
// compiler and start `kv-dc-relay serve` from it: the prebuild is used as is. With
// KV_DC_RELAY_BUILD_FROM_SOURCE=1 the same tarball compiles the addon with cmake-js and the loader takes it.
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as readline from 'readline';
import { ROOT, sh } from './staged-package';

/** A fresh "host" folder with the tarball installed; returns the installed package's folder. */
function installTarball(work: string, name: string, tarball: string, extraArgs: string[], env: NodeJS.ProcessEnv): string {
  const app = path.join(work, name);
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `host-${name}`, version: '1.0.0', private: true }));
  sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...extraArgs, tarball], app, env);
  return app;
}

interface AddonEntry {
  kind: string;
  path: string;
}
interface LogEntry {
  msg?: string;
  addons?: { core?: AddonEntry; relay?: AddonEntry };
  address?: string;
}

/** Starts `kv-dc-relay serve` from an installed host, waits for `listening`, stops it with SIGTERM. */
async function serveOnce(app: string, config: string): Promise<LogEntry[]> {
  const child = spawn(path.join(app, 'node_modules', '.bin', 'kv-dc-relay'), ['serve', '--config', config], {
    cwd: app,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const seen: string[] = [];
    await new Promise<void>((resolve, reject) => {
      readline.createInterface({ input: child.stderr }).on('line', (line) => {
        seen.push(line);
        if (line.includes('"msg":"listening"')) resolve();
      });
      void exited.then((code) => reject(new Error(`serve exited (${code}) before listening:\n${seen.join('\n')}`)));
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    return seen.map((l) => JSON.parse(l) as LogEntry);
  } finally {
    child.kill('SIGKILL');
  }
}

describe('packed tarball', () => {
  let work: string;
  let tarball: string;
  let config: string;

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-pack-'));
    sh('npm', ['run', 'prebuild'], ROOT);
    const packed = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', work], ROOT)) as { filename: string; files: { path: string }[] }[];
    // prepack built dist/ from the current sources: the tarball never ships stale JavaScript.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { TYPESCRIPT, upToDate } = require(path.join(ROOT, 'scripts', 'build-inputs.js')) as { TYPESCRIPT: unknown; upToDate(root: string, step: unknown): boolean };
    expect(upToDate(ROOT, TYPESCRIPT)).toBe(true);
    const files = packed[0].files.map((f) => f.path);
    expect(files).toContain(`prebuilds/${process.platform}-${process.arch}/kv_dc_relay.node`);
    expect(files).toContain(`prebuilds/${process.platform}-${process.arch}/kv_dc_relay_core.node`);
    expect(files).toContain('dist/src/cli/main.js');
    // The emitted declarations of src/native/ import the addon's types from dist/binding.d.ts.
    expect(files).toEqual(expect.arrayContaining(['dist/src/native/addon.d.ts', 'dist/binding.d.ts']));
    expect(files.some((f) => f.startsWith('build/'))).toBe(false);
    // What only development uses stays out: the testing addon's and the fuzz targets' sources, the test runners.
    expect(files.filter((f) => /^native\/(testing|fuzz)\/|^scripts\/(test|test-asan|ts-hook)\.js$|^scripts\/without-libzmq\.sh$/.test(f))).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(['native/bindings/relay/pool_window.cc', 'scripts/install.js', 'CMakeLists.txt']));
    tarball = path.join(work, packed[0].filename);
    config = path.join(work, 'relay.yaml');
    fs.writeFileSync(config, 'dcId: dc-packaged\nbind: 127.0.0.1:0\nendpoints: []\n');
  }, 240_000);

  afterAll(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test('installs on a host without a compiler and serves from the prebuild', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, CC: 'false', CXX: 'false' };
    delete env.npm_config_build_from_source;
    const app = installTarball(work, 'no-compiler', tarball, [], env);
    const installed = path.join(app, 'node_modules', 'kv-dc-relay');
    expect(fs.existsSync(path.join(installed, 'build'))).toBe(false);

    const log = await serveOnce(app, config);
    const addons = log.find((e) => e.msg === 'native addons loaded')?.addons;
    for (const addon of [addons?.core, addons?.relay]) {
      expect(addon?.kind).toBe('prebuild');
      expect(addon?.path).toContain(path.join(installed, 'prebuilds'));
    }
    expect(log.find((e) => e.msg === 'listening')?.address).toMatch(/^127\.0\.0\.1:\d+$/);
  }, 120_000);

  test('a build from source compiles with cmake-js and the loader takes that build', async () => {
    const app = installTarball(work, 'from-source', tarball, [], { ...process.env, KV_DC_RELAY_BUILD_FROM_SOURCE: '1' });
    const installed = path.join(app, 'node_modules', 'kv-dc-relay');
    expect(fs.existsSync(path.join(installed, 'build', 'Release', 'kv_dc_relay.node'))).toBe(true);

    const addons = (await serveOnce(app, config)).find((e) => e.msg === 'native addons loaded')?.addons;
    expect([addons?.core?.kind, addons?.relay?.kind]).toEqual(['local-build', 'local-build']);
  }, 300_000);
});
