// Where `serve` binds /metrics (plaintext, unauthenticated): a port alone binds loopback, and a
// listener other hosts can reach is warned about. Real relay processes, real sockets.
import * as net from 'net';
import * as os from 'os';
import { parseSocketAddress } from '../../src/config/schema';
import { relayConfig } from '../support/relay-config';
import { RelayProcess } from '../support/relay-process';
import { waitFor } from '../support/waitFor';

const WARNING = 'metrics listener is reachable from other hosts: /metrics and /healthz are plaintext HTTP without authentication';

let relay: RelayProcess | undefined;
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

/** An IPv4 address of this machine other than loopback, if it has one. */
function externalIPv4(): string | undefined {
  return Object.values(os.networkInterfaces()).flat().find((i) => i?.family === 'IPv4' && !i.internal)?.address;
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

test('metricsBind as a port alone listens on 127.0.0.1 only, without a warning', async () => {
  relay = await new RelayProcess(relayConfig([], { metricsBind: 0 })).start();
  const { host, port } = parseSocketAddress(relay.metricsAddress)!;
  expect(host).toBe('127.0.0.1');
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  expect(health.status).toBe(200);
  const external = externalIPv4();
  if (external !== undefined) expect(await connects(external, port)).toBe(false);
  // Every line the relay logs at start is out once it has stopped.
  expect(await relay.stop('SIGTERM')).toBe(0);
  expect(relay.events().map((e) => e.msg)).toContain('stopped');
  expect(relay.events().map((e) => e.msg)).not.toContain(WARNING);
});

test('a metricsBind on every interface is served and warned about', async () => {
  relay = await new RelayProcess(relayConfig([], { metricsBind: '0.0.0.0:0' })).start();
  const { host, port } = parseSocketAddress(relay.metricsAddress)!;
  expect(host).toBe('0.0.0.0');
  await waitFor(() => relay!.events().some((e) => e.msg === WARNING), 'the warning');
  const warning = relay.events().find((e) => e.msg === WARNING)!;
  expect(warning).toMatchObject({ level: 40, address: relay.metricsAddress });
  expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
});
