// `kv-dc-relay status` when it gets no status: one line naming the address and the cause, exit 1;
// a wrong address is a usage error (exit 2). Its answers from a real relay: test/diagnostics.
import { spawnSync } from 'child_process';
import * as http from 'http';
import * as net from 'net';
import * as path from 'path';
import { PassThrough } from 'stream';
import { main } from '../../src/cli/main';
import { duration } from '../../src/cli/status';
import { ROOT } from '../support/cli-process';

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(['status', ...argv], {
    stdout: new PassThrough().on('data', (b: Buffer) => (stdout += b.toString())),
    stderr: new PassThrough().on('data', (b: Buffer) => (stderr += b.toString())),
  });
  return { code, stdout, stderr };
}

async function listening(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

test('nothing listening: connection refused, exit 1', async () => {
  const server = net.createServer();
  const port = await listening(server);
  await new Promise((resolve) => server.close(resolve));
  expect(await run([`127.0.0.1:${port}`])).toEqual({
    code: 1,
    stdout: '',
    stderr: `kv-dc-relay status: no status from 127.0.0.1:${port}: connection refused (nothing listens there: give the relay's metricsBind address)\n`,
  });
});

test('an HTTP server without /status (not a relay metrics listener), and one that never answers', async () => {
  const other = http.createServer((_req, res) => res.writeHead(404).end('not found\n'));
  const silent = net.createServer(() => undefined); // accepts and never answers
  const [otherPort, silentPort] = [await listening(other), await listening(silent)];
  try {
    expect(await run([`127.0.0.1:${otherPort}`])).toMatchObject({
      code: 1,
      stderr: `kv-dc-relay status: no status from 127.0.0.1:${otherPort}: it answers HTTP without a /status endpoint (give the relay's metricsBind address)\n`,
    });
    expect(await run([`127.0.0.1:${silentPort}`, '--timeout-ms', '300'])).toMatchObject({
      code: 1,
      stderr: `kv-dc-relay status: no status from 127.0.0.1:${silentPort}: connection timed out (no answer within 300 ms)\n`,
    });
  } finally {
    other.close();
    silent.close();
  }
});

test('usage: HOST:PORT checked first (exit 2), --help (exit 0)', async () => {
  expect(await run(['http://127.0.0.1:9464'])).toEqual({
    code: 2,
    stdout: '',
    stderr: "kv-dc-relay status: 'http://127.0.0.1:9464' is a URL: give the relay as HOST:PORT, without a scheme (see kv-dc-relay status --help)\n",
  });
  const help = await run(['--help']);
  expect(help.code).toBe(0);
  expect(help.stdout).toContain('Usage: kv-dc-relay status [options] <relay>');
  expect(help.stdout).toContain('--json');
});

test('status loads no relay code: no relay addon, no zeromq, no etcd3', () => {
  const script = `require(${JSON.stringify(path.join(ROOT, 'src', 'cli', 'main.ts'))}).main(['status', '127.0.0.1:1', '--timeout-ms', '200'], { stdout: { write() {} }, stderr: { write() {} } })
    .then((code) => console.log(JSON.stringify({ code, loaded: Object.keys(require.cache) })));`;
  const result = spawnSync(process.execPath, ['-r', path.join(ROOT, 'scripts', 'ts-hook.js'), '-e', script], { encoding: 'utf8' });
  const { code, loaded } = JSON.parse(result.stdout) as { code: number; loaded: string[] };
  expect(code).toBe(1);
  expect(loaded.some((f) => f.endsWith(path.join('src', 'cli', 'status.ts')))).toBe(true);
  expect(loaded.filter((f) => /\.node$|node_modules\/(zeromq|etcd3)\/|src\/(server|producer|ingest|diagnostics)\//.test(f))).toEqual([]);
});

test('durations as people read them', () => {
  expect([0.4, 9.96, 12.4, 75, 3600 + 120 + 5].map(duration)).toEqual(['0.4 s', '10 s', '12 s', '1 min 15 s', '1 h 2 min']);
});
