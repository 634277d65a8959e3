// The relay's TCP listener. It owns every accepted connection so that shutdown can close all of
// them, including idle ones and ones whose client stopped reading, and it turns Nagle's algorithm
// off: deltas are small and latency-sensitive (Node servers default to delaying small writes).
import * as net from 'net';

export interface Listener {
  readonly host: string;
  readonly port: number;
  /** "host:port" with IPv6 hosts in brackets. */
  readonly address: string;
  /** TCP connections open now. */
  readonly connections: number;
  /** Stops accepting; resolves once every connection closed or `graceMs` passed, then destroys the rest. */
  close(graceMs: number): Promise<void>;
}

/** Splits a numeric "IP:port" / "[IPv6]:port" bind address; throws RangeError otherwise. */
export function parseBind(bind: string): { host: string; port: number } {
  const match = /^\[([^\]]+)\]:(\d+)$/.exec(bind) ?? /^([^:]+):(\d+)$/.exec(bind);
  const port = match ? Number(match[2]) : NaN;
  if (!match || net.isIP(match[1]) === 0 || !Number.isInteger(port) || port > 65_535) {
    throw new RangeError(`bind must be a numeric IP:port socket address, got "${bind}"`);
  }
  return { host: match[1], port };
}

export interface ListenOptions {
  /** Decides on each accepted socket before anything is read from it; a refused one is closed. */
  admit?: (socket: net.Socket) => boolean;
}

/** Listens on `bind` and hands each accepted (and admitted) socket to `accept`. */
export function listen(bind: string, accept: (socket: net.Socket) => void, options: ListenOptions = {}): Promise<Listener> {
  const { host, port } = parseBind(bind);
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ noDelay: true }, (socket) => {
    if (options.admit && !options.admit(socket)) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    accept(socket);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const bound = (server.address() as net.AddressInfo).port;
      resolve({
        host,
        port: bound,
        address: net.isIPv6(host) ? `[${host}]:${bound}` : `${host}:${bound}`,
        get connections() {
          return sockets.size;
        },
        close: (graceMs) => closeAll(server, sockets, graceMs),
      });
    });
  });
}

function closeAll(server: net.Server, sockets: Set<net.Socket>, graceMs: number): Promise<void> {
  server.close();
  return new Promise((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(grace);
      for (const socket of sockets) socket.destroy();
      resolve();
    };
    const grace = setTimeout(finish, graceMs);
    // Clients that read their streams' ends usually go away quickly; stop waiting once all have
    // (the set drops each socket on close before these listeners run).
    if (sockets.size === 0) finish();
    for (const socket of sockets) socket.once('close', () => sockets.size === 0 && finish());
  });
}
