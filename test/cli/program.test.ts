// The command line as a user meets it: --help on every command and a `help` command, --version,
// one-line errors with exit code 2 for usage, HOST:PORT checked before anything connects, an
// unreachable relay named with gRPC's cause within --timeout-ms (exit 1), help that loads no relay
// code, and a native addon that does not load reported as one line (exit 1), not a stack trace.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import { main } from '../../src/cli/main';
import { connectionCause, parseRelayAddress } from '../../src/cli/usage';
import { ROOT, runCli } from '../support/cli-process';

const COMMANDS = ['serve', 'demo', 'sim-engine', 'watch', 'query', 'status', 'register'];
const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = new PassThrough().on('data', (b: Buffer) => (stdout += b.toString()));
  const err = new PassThrough().on('data', (b: Buffer) => (stderr += b.toString()));
  const code = await main(argv, { stdout: out, stderr: err });
  return { code, stdout, stderr };
}

const VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('help and version', () => {
  test.each(COMMANDS)('%s: --help, -h and help <command> print its usage and exit 0', async (command) => {
    for (const argv of [[command, '--help'], ['help', command], [command, '-h']]) {
      const { code, stdout } = await run(argv);
      expect(code).toBe(0);
      expect(stdout).toContain(`Usage: kv-dc-relay ${command} `);
      expect(stdout).toContain('Exit codes:');
    }
  });

  test('--version, -V and the top-level help', async () => {
    expect(await run(['--version'])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    expect((await run(['-V'])).stdout).toBe(`${VERSION}\n`);
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    for (const command of [...COMMANDS, 'help']) expect(help.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    const none = await run([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage: kv-dc-relay');
  });

  test('help loads no relay code: no relay addon, no zeromq, no etcd3', () => {
    const script = `require(${JSON.stringify(path.join(ROOT, 'src', 'cli', 'main.ts'))}).main(['query', '--help'], { stdout: { write() {} }, stderr: process.stderr })
      .then((code) => console.log(JSON.stringify({ code, loaded: Object.keys(require.cache) })));`;
    const result = spawnSync(process.execPath, ['-r', HOOK, '-e', script], { encoding: 'utf8' });
    const { code, loaded } = JSON.parse(result.stdout) as { code: number; loaded: string[] };
    expect(code).toBe(0);
    expect(loaded.filter((f) => /\.node$|node_modules\/(zeromq|etcd3)\/|src\/(server|producer|ingest)\//.test(f))).toEqual([]);
  });
});

describe('usage errors are one line, exit 2', () => {
  test.each([
    [['query', '127.0.0.1:5561', '--model', 'm', '--tokens', '1', '--bogus'], "kv-dc-relay query: unknown option '--bogus' (see kv-dc-relay query --help)\n"],
    [['serve', '--config'], "kv-dc-relay serve: option '--config <file>' argument missing (see kv-dc-relay serve --help)\n"],
    [['sim-engine', '--port', '70000'], "kv-dc-relay sim-engine: option '--port <port>' argument '70000' is invalid. expected an integer in 0..65535 (see kv-dc-relay sim-engine --help)\n"],
    [['frobnicate'], "kv-dc-relay: unknown command 'frobnicate' (see kv-dc-relay --help)\n"],
    [['query', 'http://127.0.0.1:5561', '--model', 'm', '--tokens', '1'], "kv-dc-relay query: 'http://127.0.0.1:5561' is a URL: give the relay as HOST:PORT, without a scheme (see kv-dc-relay query --help)\n"],
    [['query', 'relay.example', '--model', 'm', '--tokens', '1'], "kv-dc-relay query: 'relay.example' is not HOST:PORT (a host name or IP address, a colon and a port) (see kv-dc-relay query --help)\n"],
    [['watch', 'relay.example:0'], "kv-dc-relay watch: 'relay.example:0': port must be in 1..65535 (see kv-dc-relay watch --help)\n"],
  ])('%j', async (argv, line) => {
    expect(await run(argv)).toEqual({ code: 2, stdout: '', stderr: line });
  });

  test('parseRelayAddress takes names, IPv4 and bracketed IPv6', () => {
    for (const ok of ['relay-a.dc-b.internal:5561', '10.0.0.1:1', '[::1]:5561', 'localhost:65535']) expect(parseRelayAddress(ok)).toBe(ok);
    for (const bad of ['[10.0.0.1]:1', 'a b:1', ':5561', 'host:', 'host:123456', 'grpc://h:1']) expect(() => parseRelayAddress(bad)).toThrow();
  });
});

describe('an unreachable relay is named with the cause, within --timeout-ms (exit 1)', () => {
  /** A port nothing listens on: bound, then closed. */
  async function closedPort(): Promise<number> {
    const server = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  test('connection refused', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const started = Date.now();
    const { code, stderr } = await run(['query', address, '--model', 'm', '--tokens', '1,2', '--timeout-ms', '1500']);
    expect(code).toBe(1);
    expect(Date.now() - started).toBeLessThan(1500 + 2_000);
    expect(stderr).toBe(`kv-dc-relay query: no answer from ${address} within 1500 ms: connection refused (connect ECONNREFUSED ${address})\n`);
  });

  test('name resolution', async () => {
    const { code, stderr } = await run(['query', 'no-such-relay.invalid:5561', '--model', 'm', '--tokens', '1', '--timeout-ms', '1500']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^kv-dc-relay query: no answer from no-such-relay\.invalid:5561 within 1500 ms: name resolution failed \(.*no-such-relay\.invalid.*\)\n$/);
  });

  test('TLS handshake against a server that is not TLS', async () => {
    // A TCP server that answers a ClientHello with plaintext garbage: the handshake fails.
    const server = net.createServer((socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n')).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    try {
      const { code, stderr } = await run(['query', address, '--model', 'm', '--tokens', '1', '--tls', '--timeout-ms', '1500']);
      expect(code).toBe(1);
      expect(stderr).toMatch(new RegExp(`^kv-dc-relay query: no answer from ${address} within 1500 ms: TLS handshake failed \\(`));
    } finally {
      server.close();
    }
  });

  test('watch says so on stderr after --timeout-ms and keeps trying', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const lines: string[] = [];
    const { runWatch } = await import('../../src/cli/watch');
    const abort = new AbortController();
    const done = runWatch({ address, out: new PassThrough(), json: true, signal: abort.signal, timeoutMs: 500, unreachable: (l) => lines.push(l) });
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => lines.length > 0 && (clearInterval(poll), resolve()), 20);
    });
    abort.abort();
    await done;
    expect(lines).toEqual([`watch: no catalog from ${address} after 500 ms: connection refused (connect ECONNREFUSED ${address}) (still trying)`]);
  });

  test('connectionCause keeps a message it does not know', () => {
    expect(connectionCause('13 INTERNAL: something else')).toBe('13 INTERNAL: something else');
  });
});

describe('a native addon that does not load is one line, exit 1', () => {
  let pkg: string;
  beforeAll(() => {
    // The sources and scripts without any build or prebuild: what a host without a usable addon has.
    pkg = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-noaddon-'));
    for (const entry of ['src', 'scripts', 'proto', 'package.json', 'binding.d.ts']) fs.cpSync(path.join(ROOT, entry), path.join(pkg, entry), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(pkg, 'node_modules'));
  });
  afterAll(() => fs.rmSync(pkg, { recursive: true, force: true }));

  test.each([
    [['serve', '--config', 'relay.yaml']],
    [['query', '127.0.0.1:5561', '--model', 'm', '--tokens', '1']],
    [['watch', '127.0.0.1:5561']],
  ])('%j', (argv) => {
    const result = spawnSync(process.execPath, ['-r', HOOK, path.join(pkg, 'src', 'cli', 'main.ts'), ...argv], { encoding: 'utf8', cwd: pkg, timeout: 30_000 });
    expect(result.status).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^kv-dc-relay: cannot load kv_dc_relay(_core)?\.node for .*: local-build .*: not present; prebuild .*: not present\. Fix: /);
  });
});

test('the CLI as a process: --version and one-line errors', async () => {
  expect(await runCli(['--version'])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  const demo = await runCli(['demo', '--bogus']);
  expect(demo.code).toBe(2);
  expect(demo.stderr).toBe("kv-dc-relay demo: unknown option '--bogus' (see kv-dc-relay demo --help)\n");
});
