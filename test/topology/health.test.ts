import * as http from 'http';
import * as net from 'net';
import type { AddressInfo } from 'net';
import { HealthMonitor } from '../../src/topology';
import { whileCollecting } from '../support/gc';

const PROBE_MS = 50;

/** A real health endpoint whose status code the test switches. */
class HealthServer {
  status = 200;
  /** When true, requests are accepted but never answered (a probe timeout). */
  hang = false;
  readonly server = http.createServer((_req, res) => {
    if (this.hang) return;
    res.writeHead(this.status).end('ok');
  });
  port = 0;

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }
  get url(): string {
    return `http://127.0.0.1:${this.port}/health`;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Resolves once `monitor` reports `expected` for `workerId` (checked on every change event). */
function availabilityBecomes(monitor: HealthMonitor, workerId: bigint, expected: boolean | undefined): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (monitor.availability(workerId) === expected) {
        off();
        resolve();
      }
    };
    const off = monitor.onChange(check);
    check();
  });
}

describe('HealthMonitor against real HTTP servers', () => {
  const monitors: HealthMonitor[] = [];
  const servers: HealthServer[] = [];
  afterEach(async () => {
    monitors.splice(0).forEach((m) => m.close());
    await Promise.all(servers.splice(0).map((s) => (s.server.listening ? s.stop() : undefined)));
  });
  function monitor(): HealthMonitor {
    const m = new HealthMonitor(PROBE_MS);
    monitors.push(m);
    return m;
  }
  async function server(): Promise<HealthServer> {
    const s = new HealthServer();
    servers.push(s);
    await s.listen();
    return s;
  }

  test('2xx is live, non-2xx not live, then live again; one change event per transition', async () => {
    const s = await server();
    const m = monitor();
    const seen: (boolean | undefined)[] = [];
    m.onChange(() => seen.push(m.availability(1n)));
    expect(m.availability(1n)).toBeUndefined();
    m.setTargets([{ workerId: 1n, url: s.url }]);
    await availabilityBecomes(m, 1n, true);
    s.status = 503;
    await availabilityBecomes(m, 1n, false);
    s.status = 204;
    await availabilityBecomes(m, 1n, true);
    expect(seen).toEqual([true, false, true]);
    expect(m.liveness(1n, false)).toBe(true); // health decides; static `live` is ignored
    expect(m.liveness(99n, false)).toBe(false); // not monitored: static `live`
  });

  test('no HTTP response before the first answer stays not authoritative; refused after an answer means not live', async () => {
    // A TCP listener that resets every connection: probes reach it (countable) but get no HTTP response.
    const resetter = net.createServer((socket) => {
      connections++;
      socket.resetAndDestroy();
      if (connections === 3) threeProbes();
    });
    let connections = 0;
    let threeProbes!: () => void;
    const probed = new Promise<void>((resolve) => (threeProbes = resolve));
    await new Promise<void>((resolve) => resetter.listen(0, '127.0.0.1', resolve));
    const port = (resetter.address() as AddressInfo).port;
    const m = monitor();
    let changes = 0;
    m.onChange(() => changes++);
    m.setTargets([{ workerId: 2n, url: `http://127.0.0.1:${port}/health` }]);
    await probed;
    expect(m.availability(2n)).toBeUndefined();
    expect(m.liveness(2n, true)).toBeUndefined();
    expect(changes).toBe(0);
    await new Promise<void>((resolve) => resetter.close(() => resolve()));
    const s = new HealthServer();
    servers.push(s);
    await s.listen(port);
    await availabilityBecomes(m, 2n, true);
    await s.stop(); // from now on the port refuses connections
    await availabilityBecomes(m, 2n, false);
  });

  test('a 404 first answer is authoritative: not live', async () => {
    const s = await server();
    s.status = 404;
    const m = monitor();
    m.setTargets([{ workerId: 3n, url: s.url }]);
    await availabilityBecomes(m, 3n, false);
  });

  test('a timeout after an answer means not live, also while garbage collections run; probing goes on', async () => {
    const s = await server();
    const m = monitor();
    m.setTargets([{ workerId: 4n, url: s.url }]);
    await availabilityBecomes(m, 4n, true);
    s.hang = true;
    // Node 20: inside AbortSignal.any(), an AbortSignal.timeout() a collection takes never fires.
    await whileCollecting(async () => {
      await availabilityBecomes(m, 4n, false);
      s.hang = false;
      await availabilityBecomes(m, 4n, true);
    });
  });

  test('workers are independent; removing a target drops its availability with a change event', async () => {
    const a = await server();
    const b = await server();
    b.status = 500;
    const m = monitor();
    m.setTargets([
      { workerId: 5n, url: a.url },
      { workerId: 6n, url: b.url },
    ]);
    await Promise.all([availabilityBecomes(m, 5n, true), availabilityBecomes(m, 6n, false)]);
    const dropped = availabilityBecomes(m, 6n, undefined);
    m.setTargets([{ workerId: 5n, url: a.url }]);
    await dropped;
    expect(m.availability(5n)).toBe(true);
  });

  test('close() aborts the probe in flight and stops probing', async () => {
    const s = await server();
    s.hang = true;
    // A long probe period: only close() can end the hanging request within the test deadline.
    const m = new HealthMonitor(60_000);
    const aborted = new Promise<void>((resolve) => s.server.once('request', (req: http.IncomingMessage) => {
      req.socket.once('close', () => resolve());
      m.close();
    }));
    m.setTargets([{ workerId: 8n, url: s.url }]);
    await aborted;
    expect(m.availability(8n)).toBeUndefined();
  }, 5_000);
});
