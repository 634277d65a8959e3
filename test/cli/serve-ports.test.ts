// `serve` binds both listeners (gRPC and metrics) before it dials any engine: a port in use ends the
// start with one plain line on stderr and exit 1, having contacted no engine and logged no
// "listening". Real relay processes; the "engine" is a TCP listener that counts who dials it.
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli-process';
import { endpointConfig, relayConfig } from '../support/relay-config';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-ports-'));
const servers: net.Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  fs.rmSync(dir, { recursive: true, force: true });
});

async function listener(onConnection: () => void = () => {}): Promise<{ port: number }> {
  const server = net.createServer((socket) => {
    onConnection();
    socket.destroy();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port };
}

/** A config whose one worker's KV-event endpoint is a listener that counts the relay's dials. */
async function configWithEngine(over: Record<string, unknown>): Promise<{ file: string; dials: () => number }> {
  let dials = 0;
  const engine = await listener(() => (dials += 1));
  const worker = { id: 1, kvEvents: { endpoint: `tcp://127.0.0.1:${engine.port}` } };
  const file = path.join(dir, `relay-${engine.port}.json`);
  fs.writeFileSync(file, JSON.stringify(relayConfig([endpointConfig([worker])], over)));
  return { file, dials: () => dials };
}

/** stderr less the JSON log lines. */
const plainLines = (stderr: string): string[] => stderr.split('\n').filter((l) => l !== '' && !l.startsWith('{'));
const messages = (stderr: string): string[] => stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { msg: string }).msg);

test.each([
  ['gRPC', (port: number) => ({ bind: `127.0.0.1:${port}` })],
  ['metrics', (port: number) => ({ metricsBind: `127.0.0.1:${port}` })],
])('a %s port in use: one plain line, exit 1, no engine dialled, nothing said to listen', async (listenerName, over) => {
  const busy = await listener();
  const { file, dials } = await configWithEngine(over(busy.port));
  const { code, stderr } = await runCli(['serve', '--config', file]);
  expect(code).toBe(1);
  expect(plainLines(stderr)).toEqual([
    `kv-dc-relay serve: cannot listen on 127.0.0.1:${busy.port} (${listenerName}): the port is in use by another process (EADDRINUSE)`,
  ]);
  expect(messages(stderr)).not.toContain('listening');
  expect(messages(stderr)).not.toContain('metrics listening');
  expect(stderr).not.toMatch(/"level":60/);
  expect(dials()).toBe(0);
});
