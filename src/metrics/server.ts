// HTTP /metrics (Prometheus text; gzip to clients that accept it: scrape-response.ts), /healthz (200
// while serving, 503 during shutdown) and, when the relay gives one, /status (the status view as
// JSON: src/diagnostics/status.ts).
import * as http from 'http';
import { BlockList, isIPv6, type AddressInfo } from 'net';
import type { Registry } from 'prom-client';
import { parseSocketAddress } from '../config/schema';
import { sendScrape } from './scrape-response';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** True for an address only this host can reach (127.0.0.0/8, ::1 in any spelling, IPv4-mapped loopback). */
export function isLoopbackAddress(host: string): boolean {
  return LOOPBACK.check(host, isIPv6(host) ? 'ipv6' : 'ipv4');
}

export interface MetricsServer {
  readonly address: string;
  /** False when the listener is reachable from other hosts (0.0.0.0, ::, a routable address). */
  readonly loopback: boolean;
  close(): Promise<void>;
}

export async function startMetricsServer(bind: string, registry: Registry, serving: () => boolean, status?: () => unknown): Promise<MetricsServer> {
  const addr = parseSocketAddress(bind);
  if (!addr) throw new Error(`invalid metrics bind address ${bind}`);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
    } else if (path === '/metrics') {
      registry.metrics().then(
        (text) => sendScrape(req, res, text, registry.contentType),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`),
      );
    } else if (path === '/status' && status) {
      let body: string;
      try {
        body = JSON.stringify(status());
      } catch (err) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(err as Error).message}\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(`${body}\n`);
    } else if (path === '/healthz') {
      const ok = serving();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'serving\n' : 'shutting down\n');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(addr.port, addr.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return {
    address: `${host}:${bound.port}`,
    loopback: isLoopbackAddress(bound.address),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
