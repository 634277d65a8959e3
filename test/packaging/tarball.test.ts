// The operator path: `npm run prebuild`, `npm pack`, then install the tarball on a host without a
// compiler and start `kv-dc-relay serve` from it. The prebuild must be picked up as is.
import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as readline from 'readline';

const ROOT = path.resolve(__dirname, '..', '..');

function sh(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}

describe('packed tarball', () => {
  let work: string;
  let app: string;

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-pack-'));
    sh('npm', ['run', 'prebuild'], ROOT);
    const packed = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', work], ROOT)) as { filename: string; files: { path: string }[] }[];
    const files = packed[0].files.map((f) => f.path);
    expect(files).toContain(`prebuilds/${process.platform}-${process.arch}/kv_dc_relay.node`);
    expect(files).toContain('dist/src/cli/main.js');
    expect(files.some((f) => f.startsWith('build/'))).toBe(false);

    app = path.join(work, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'operator-host', version: '1.0.0', private: true }));
    // No compiler on this "host": any attempt to compile fails the install.
    const env = { ...process.env, CC: 'false', CXX: 'false', npm_config_build_from_source: '' };
    delete env.npm_config_build_from_source;
    sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(work, packed[0].filename)], app, env);
  }, 240_000);

  afterAll(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  test('installs without compiling and `kv-dc-relay serve` starts from it', async () => {
    const installed = path.join(app, 'node_modules', 'kv-dc-relay');
    expect(fs.existsSync(path.join(installed, 'build'))).toBe(false);
    const config = path.join(work, 'relay.yaml');
    fs.writeFileSync(config, 'dcId: dc-packaged\nbind: 127.0.0.1:0\nendpoints: []\n');

    const child = spawn(path.join(app, 'node_modules', '.bin', 'kv-dc-relay'), ['serve', '--config', config], {
      cwd: app,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const lines = readline.createInterface({ input: child.stderr });
    const seen: string[] = [];
    const listening = await new Promise<{ address: string }>((resolve, reject) => {
      lines.on('line', (line) => {
        seen.push(line);
        try {
          const entry = JSON.parse(line) as { msg?: string; address?: string };
          if (entry.msg === 'listening') resolve(entry as { address: string });
        } catch {
          // not JSON: kept in `seen` for the failure message
        }
      });
      void exited.then((code) => reject(new Error(`serve exited (${code}) before listening:\n${seen.join('\n')}`)));
    });
    expect(listening.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(seen.join('\n')).toContain('prebuild');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);
});
