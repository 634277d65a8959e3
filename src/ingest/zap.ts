// Peer allow-lists of bound KV-event sockets, enforced by a ZAP handler (ZMQ RFC 27): libzmq asks the
// handler on inproc://zeromq.zap.01 of the socket's context about every connection of a socket with
// a zapDomain, before the handshake completes, so a refused peer never delivers a message.
// One handler per ingest context (per thread), serving every registered domain; it runs while at
// least one domain is registered.
import { Router } from 'zeromq';
import { ingestContext } from './zmq-context';

const ZAP_ENDPOINT = 'inproc://zeromq.zap.01';
const domains = new Map<string, ReadonlySet<string>>();
let handler: Promise<Router> | undefined;
let nextDomain = 0;
/** A closed handler's endpoint is released by libzmq's reaper thread a moment later. */
const BIND_ATTEMPTS = 100;
const BIND_RETRY_MS = 10;

/** Registers an allow-list of peer IP addresses under a fresh domain; resolves to the domain and its release. */
export async function allowPeers(peers: readonly string[]): Promise<{ domain: string; release(): void }> {
  const domain = `kv-dc-relay-kv-events-${++nextDomain}`;
  domains.set(domain, new Set(peers.map(normalizeAddress)));
  handler ??= startHandler();
  try {
    await handler;
  } catch (err) {
    domains.delete(domain);
    handler = undefined;
    throw err;
  }
  return {
    domain,
    release() {
      domains.delete(domain);
      if (domains.size > 0 || !handler) return;
      const closing = handler;
      handler = undefined;
      void closing.then((router) => router.close());
    },
  };
}

async function startHandler(): Promise<Router> {
  const router = new Router({ context: ingestContext(), linger: 0 });
  for (let attempt = 1; ; attempt++) {
    try {
      await router.bind(ZAP_ENDPOINT);
      break;
    } catch (err) {
      if ((err as { code?: string }).code !== 'EADDRINUSE' || attempt === BIND_ATTEMPTS) {
        router.close();
        throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, BIND_RETRY_MS));
    }
  }
  void serve(router);
  return router;
}

/** IPv4 peers of a dual-stack socket show as ::ffff:a.b.c.d. */
function normalizeAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

async function serve(router: Router): Promise<void> {
  while (!router.closed) {
    let frames: Buffer[];
    try {
      frames = await router.receive();
    } catch {
      return; // closed
    }
    // [routing id, delimiter, version, request id, domain, address, identity, mechanism, ...credentials]
    if (frames.length < 8) continue;
    const [id, delimiter, version, requestId, domain, address] = frames;
    const allowed = domains.get(domain.toString())?.has(normalizeAddress(address.toString())) ?? false;
    const reply = [id, delimiter, version, requestId, Buffer.from(allowed ? '200' : '400'), Buffer.from(allowed ? 'OK' : 'peer not allowed'), Buffer.alloc(0), Buffer.alloc(0)];
    try {
      await router.send(reply);
    } catch {
      return;
    }
  }
}
