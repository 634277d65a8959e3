// TLS and mTLS on the relay's gRPC listener, over real TLS on loopback with certificates made by
// openssl for this run: who gets in (and with which status), the subject allow-list per call, and
// certificate rotation picked up by new connections without a restart.
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as grpc from '@grpc/grpc-js';
import * as tls from 'tls';
import { Writable } from 'stream';
import pino from 'pino';
import type { TlsConfig } from '../../src/config/schema';
import { clientChannel, readClientTlsFiles, type ClientTlsFiles } from '../../src/security/client-tls';
import { startRelayServer, type RelayServer } from '../../src/transport/server';
import { getRelayInfo, makeClient, type KvEventRelayClient } from '../../src/wire/service';
import { CertificateFactory, type CertFiles } from '../support/certificates';
import { TestSource } from '../support/test-source';
import { waitFor, waitForValue } from '../support/waitFor';
import { MARKER, RELAY, StreamReader, subscriber } from '../transport/helpers';

const certs = new CertificateFactory();
const ca = certs.ca('ca');
const otherCa = certs.ca('other-ca');
const relayCert = certs.server('relay', ca);
const routerA = certs.client('router-a', ca, '/CN=router-a/O=acme');
const routerB = certs.client('router-b', ca, '/CN=router-b/O=acme/OU=west');
const intruder = certs.client('intruder', otherCa, '/CN=router-a/O=acme');
// Signed by the relay's CA, each carrying router-a's name beside another CN.
const twoCns = certs.client('two-cns', ca, '/CN=evil/CN=router-a');
const twoCnsReversed = certs.client('two-cns-reversed', ca, '/CN=router-a/CN=evil');
const multiValuedRdn = certs.client('multi-valued-rdn', ca, '/CN=evil+CN=router-a');

const servers: RelayServer[] = [];
const clients: KvEventRelayClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.shutdown()));
});
afterAll(() => certs.remove());

const CALL_MS = 10_000;

interface LogLine {
  msg: string;
  [k: string]: unknown;
}

async function start(config: TlsConfig, lines: LogLine[] = []): Promise<RelayServer> {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as LogLine);
      done();
    },
  });
  const server = await startRelayServer({ source: new TestSource(), bind: '127.0.0.1:0', relay: RELAY, tls: config, logger: pino(sink) });
  servers.push(server);
  return server;
}

function client(server: RelayServer, files?: ClientTlsFiles): KvEventRelayClient {
  const { credentials, channelOptions } = clientChannel(files ? readClientTlsFiles(files) : undefined);
  // A connection of its own per client, so each test sees its own handshake.
  const c = makeClient(server.address, { credentials, channelOptions: { ...channelOptions, 'grpc.use_local_subchannel_pool': 1 } });
  clients.push(c);
  return c;
}

/** The status code of a gRPC health check (an empty request: the server's overall status). */
function healthCode(server: RelayServer, files: ClientTlsFiles): Promise<number> {
  const { credentials, channelOptions } = clientChannel(readClientTlsFiles(files));
  const c = new grpc.Client(server.address, credentials, { ...channelOptions, 'grpc.use_local_subchannel_pool': 1 });
  const bytes = (b: Buffer): Buffer => b;
  return new Promise((resolve) => {
    c.makeUnaryRequest('/grpc.health.v1.Health/Check', bytes, bytes, Buffer.alloc(0), { deadline: Date.now() + CALL_MS }, (err) => {
      c.close();
      resolve(err ? err.code : grpc.status.OK);
    });
  });
}

/** The status code of a GetRelayInfo call (0 when it succeeds). */
async function infoCode(c: KvEventRelayClient): Promise<{ code: number; details: string }> {
  try {
    await getRelayInfo(c, { contractMarker: MARKER }, { deadline: Date.now() + CALL_MS });
    return { code: grpc.status.OK, details: '' };
  } catch (err) {
    const e = err as grpc.ServiceError;
    return { code: e.code, details: e.details };
  }
}

/** The subject CN of the certificate a fresh TLS connection to `server` is shown. */
function servedCn(server: RelayServer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: server.port, ca: fs.readFileSync(ca.cert), servername: 'localhost', ALPNProtocols: ['h2'] }, () => {
      const cn = socket.getPeerCertificate().subject.CN;
      socket.destroy();
      resolve(String(cn));
    });
    socket.once('error', reject);
  });
}

const serverTls = (over: Partial<TlsConfig> = {}): TlsConfig => ({ cert: relayCert.cert, key: relayCert.key, requireClientCert: false, ...over });

describe('TLS listener', () => {
  it('serves a client that trusts its CA, and refuses plaintext clients and clients trusting another CA', async () => {
    const server = await start(serverTls());
    expect(server.secure).toBe(true);
    const info = await getRelayInfo(client(server, { ca: ca.cert }), { contractMarker: MARKER });
    expect(info.relay?.relayIncarnation).toBe(RELAY.relayIncarnation);
    // The name on the certificate may differ from the address dialled.
    expect((await infoCode(client(server, { ca: ca.cert, servername: 'relay.test' }))).code).toBe(grpc.status.OK);
    expect((await infoCode(client(server, { ca: ca.cert, servername: 'elsewhere.test' }))).code).toBe(grpc.status.UNAVAILABLE);

    expect((await infoCode(client(server))).code).toBe(grpc.status.UNAVAILABLE);
    expect((await infoCode(client(server, { ca: otherCa.cert }))).code).toBe(grpc.status.UNAVAILABLE);
  }, 30_000);

  it('under mTLS refuses clients without a certificate or with one from another CA', async () => {
    const server = await start(serverTls({ ca: ca.cert, requireClientCert: true }));
    expect((await infoCode(client(server, { ca: ca.cert, ...routerA }))).code).toBe(grpc.status.OK);
    expect((await infoCode(client(server, { ca: ca.cert }))).code).toBe(grpc.status.UNAVAILABLE);
    expect((await infoCode(client(server, { ca: ca.cert, ...intruder }))).code).toBe(grpc.status.UNAVAILABLE);
  }, 30_000);
});

describe('client subject allow-list', () => {
  it('admits listed subjects per call: PERMISSION_DENIED for other verified subjects, UNAUTHENTICATED without a verified certificate', async () => {
    const lines: LogLine[] = [];
    // Client certificates optional at the TLS level: the allow-list decides per call.
    const server = await start(serverTls({ ca: ca.cert, allowedSubjects: ['router-a', 'CN=nobody, O=acme'] }), lines);

    expect((await infoCode(client(server, { ca: ca.cert, ...routerA }))).code).toBe(grpc.status.OK);
    const denied = await infoCode(client(server, { ca: ca.cert, ...routerB }));
    expect(denied.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(denied.details).toContain('CN=router-b');
    expect(denied.details).toContain('tls.allowedSubjects');
    expect((await infoCode(client(server, { ca: ca.cert }))).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await infoCode(client(server, { ca: ca.cert, ...intruder }))).code).toBe(grpc.status.UNAUTHENTICATED);

    // Streams are refused the same way, before the handler runs.
    const reader = new StreamReader(client(server, { ca: ca.cert, ...routerB }).watchKvPoolCatalog(subscriber('denied')));
    expect((await reader.end(CALL_MS)).code).toBe(grpc.status.PERMISSION_DENIED);
    // Health (and reflection) sit behind the same check.
    expect(await healthCode(server, { ca: ca.cert, ...routerA })).toBe(grpc.status.OK);
    expect(await healthCode(server, { ca: ca.cert, ...routerB })).toBe(grpc.status.PERMISSION_DENIED);
    expect(lines.some((l) => l.msg === 'call refused')).toBe(true);
    expect(server.tlsStats()?.refusedCallsTotal).toEqual({ unauthenticated: 2, permissionDenied: 3 });
  }, 30_000);

  it('a bare name matches only a subject with exactly one CN: CN=evil, CN=router-a is refused by [router-a]', async () => {
    const server = await start(serverTls({ ca: ca.cert, requireClientCert: true, allowedSubjects: ['router-a'] }));
    expect((await infoCode(client(server, { ca: ca.cert, ...routerA }))).code).toBe(grpc.status.OK);
    for (const cert of [twoCns, twoCnsReversed, multiValuedRdn]) {
      const denied = await infoCode(client(server, { ca: ca.cert, ...cert }));
      expect({ cert: cert.cert, code: denied.code }).toEqual({ cert: cert.cert, code: grpc.status.PERMISSION_DENIED });
      expect(denied.details).toContain('CN=evil');
    }
    // Listed as a full subject, the two-CN certificate is admitted (the operator named both).
    const full = await start(serverTls({ ca: ca.cert, requireClientCert: true, allowedSubjects: ['CN=evil, CN=router-a'] }));
    expect((await infoCode(client(full, { ca: ca.cert, ...twoCns }))).code).toBe(grpc.status.OK);
    expect((await infoCode(client(full, { ca: ca.cert, ...routerA }))).code).toBe(grpc.status.PERMISSION_DENIED);
  }, 30_000);

  it('matches a full subject exactly (every attribute, in any order)', async () => {
    const server = await start(serverTls({ ca: ca.cert, requireClientCert: true, allowedSubjects: ['OU=west, CN=router-b, O=acme'] }));
    expect((await infoCode(client(server, { ca: ca.cert, ...routerB }))).code).toBe(grpc.status.OK);
    // router-a has CN and O but not OU=west.
    expect((await infoCode(client(server, { ca: ca.cert, ...routerA }))).code).toBe(grpc.status.PERMISSION_DENIED);
  }, 30_000);
});

describe('certificate rotation', () => {
  function install(from: CertFiles, to: CertFiles): void {
    // Each file replaced atomically, one after the other, as most rotation tools do.
    for (const [src, dst] of [[from.cert, to.cert], [from.key, to.key]]) {
      fs.copyFileSync(src, `${dst}.tmp`);
      fs.renameSync(`${dst}.tmp`, dst);
    }
  }

  it('new connections get the new certificate without a restart; a broken set is refused and the last good one kept', async () => {
    const live = { cert: `${certs.dir}/live.pem`, key: `${certs.dir}/live-key.pem` };
    install(relayCert, live);
    const lines: LogLine[] = [];
    const server = await start({ ...live, ca: ca.cert, requireClientCert: true }, lines);
    expect(await servedCn(server)).toBe('relay');
    const before = client(server, { ca: ca.cert, ...routerA });
    expect((await infoCode(before)).code).toBe(grpc.status.OK);

    install(certs.server('relay-rotated', ca), live);
    await waitForValue(async () => (await servedCn(server)) === 'relay-rotated', 'the rotated certificate on new connections', 15_000, 100);
    expect(lines.some((l) => l.msg === 'tls certificates reloaded' && String(l.subject).includes('relay-rotated'))).toBe(true);
    expect((await infoCode(client(server, { ca: ca.cert, ...routerA }))).code).toBe(grpc.status.OK);
    // The connection made before the rotation keeps working.
    expect((await infoCode(before)).code).toBe(grpc.status.OK);

    // A key that does not belong to the certificate: refused, the rotated pair stays in service.
    fs.copyFileSync(routerB.key, live.key);
    await waitFor(() => lines.some((l) => l.msg.startsWith('tls certificate files refused') && l.field === 'tls.key'), 'the refused key to be reported', 15_000, 50);
    expect(await servedCn(server)).toBe('relay-rotated');
    expect((await infoCode(client(server, { ca: ca.cert, ...routerA }))).code).toBe(grpc.status.OK);
    // A poll may also have caught the rotation halfway (new certificate, old key): refused as well.
    const stats = server.tlsStats()!;
    expect(stats.certificateReloadsTotal).toBe(1);
    expect(stats.certificateRefusedTotal).toBeGreaterThanOrEqual(1);
    expect(stats.certificateExpirySeconds * 1000).toBe(Date.parse(new crypto.X509Certificate(fs.readFileSync(live.cert)).validTo));
  }, 60_000);
});

describe('plaintext stays the default', () => {
  it('a server without tls serves plaintext clients', async () => {
    const server = await startRelayServer({ source: new TestSource(), bind: '127.0.0.1:0', relay: RELAY });
    servers.push(server);
    expect(server.secure).toBe(false);
    expect(server.tlsStats()).toBeUndefined();
    expect((await infoCode(client(server))).code).toBe(grpc.status.OK);
    expect((await infoCode(client(server, { ca: ca.cert }))).code).toBe(grpc.status.UNAVAILABLE);
  }, 30_000);
});
