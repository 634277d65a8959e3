// The global-router CLI against a loopback relay: one decision per JSON request line, usage errors
// with exit 2; with --tls-* flags, against a relay that requires client certificates (mTLS).
import { PassThrough, Readable } from 'stream';
import { main, parseRequestLine } from '../../examples/global-router/cli';
import { saltSeed, sequenceHashes } from '../../src/native/hashing';
import { ServingReadinessState } from '../../src/wire/enums';
import { startRelayServer, type RelayServer } from '../../src/transport/server';
import { CertificateFactory } from '../support/certificates';
import { topologyEntry } from '../client/fixtures';
import { SERVER_RELAY, startRelay } from '../client/helpers';
import { insert } from '../client/query-fixture';
import { TestSource, testProducer } from '../support/test-source';

function io(lines: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (b: Buffer) => (out += b.toString()));
  stderr.on('data', (b: Buffer) => (err += b.toString()));
  return { streams: { stdin: Readable.from(lines.map((l) => `${l}\n`)), stdout, stderr }, out: () => out, err: () => err };
}

describe('global-router CLI', () => {
  let servers: RelayServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.shutdown()));
    servers = [];
  });

  it('routes each request line to the DC holding its prefix', async () => {
    const tokens = Array.from({ length: 64 * 4 }, (_, i) => 9000 + i);
    const hashes = sequenceHashes(Uint32Array.from(tokens), 64, false, saltSeed(null, null));
    for (const [pool, depth] of [[1, 1], [2, 3]]) {
      const source = new TestSource();
      const feed = source.attachPool(testProducer({ pool, bucketCount: 1024 }));
      feed.publish(insert(feed.words, hashes.subarray(0, depth)));
      source.setReadiness([topologyEntry('llama', ServingReadinessState.READY, 'dynamo')]);
      servers.push(await startRelay(source));
    }
    const run = io([JSON.stringify({ tokens }), '', JSON.stringify({ tokens: tokens.slice(0, 64), model: 'mistral' }), 'not json']);
    const code = await main(['--dc', `east=${servers[0].address}`, '--dc', `west=${servers[1].address}`, '--model', 'llama', '--wait-ms', '30000'], run.streams);
    expect(code).toBe(2); // the bad line
    const [first, second] = run.out().trim().split('\n').map((l) => JSON.parse(l));
    expect(first).toMatchObject({ dc: 'west', chosen: { matchedTokens: 192, promptTokens: 256 }, skipped: [] });
    expect(first.candidates.map((c: { dc: string; matchedTokens: number }) => [c.dc, c.matchedTokens])).toEqual([
      ['east', 64],
      ['west', 192],
    ]);
    expect(second).toEqual({ dc: null, chosen: null, candidates: [], skipped: [{ dc: 'east', reason: 'unknownModel' }, { dc: 'west', reason: 'unknownModel' }] });
    expect(run.err()).toContain('a request line must be JSON');
  });

  describe('over TLS', () => {
    const certs = new CertificateFactory();
    const ca = certs.ca('ca');
    const relayCert = certs.server('relay', ca);
    const router = certs.client('router', ca);
    afterAll(() => certs.remove());

    it('routes through a relay that requires a client certificate', async () => {
      const tokens = Array.from({ length: 64 * 2 }, (_, i) => 7000 + i);
      const source = new TestSource();
      const feed = source.attachPool(testProducer({ pool: 1, bucketCount: 1024 }));
      feed.publish(insert(feed.words, sequenceHashes(Uint32Array.from(tokens), 64, false, saltSeed(null, null))));
      source.setReadiness([topologyEntry('llama', ServingReadinessState.READY, 'dynamo')]);
      const tls = { cert: relayCert.cert, key: relayCert.key, ca: ca.cert, requireClientCert: true };
      const server = await startRelayServer({ source, bind: '127.0.0.1:0', relay: SERVER_RELAY, tls });
      servers.push(server);
      const dc = ['--dc', `east=${server.address}`, '--model', 'llama', '--tls-servername', 'relay.test'];

      const run = io([JSON.stringify({ tokens })]);
      expect(await main([...dc, '--wait-ms', '30000', '--tls-ca', ca.cert, '--tls-cert', router.cert, '--tls-key', router.key], run.streams)).toBe(0);
      expect(JSON.parse(run.out())).toMatchObject({ dc: 'east', chosen: { matchedTokens: 128, promptTokens: 128 } });
      expect(run.err()).not.toContain('routing without a complete view');

      // Without its certificate the handshake is refused: no view of the DC, nothing routed there.
      const bare = io([JSON.stringify({ tokens })]);
      expect(await main([...dc, '--wait-ms', '1000', '--tls-ca', ca.cert], bare.streams)).toBe(0);
      expect(JSON.parse(bare.out())).toMatchObject({ dc: null, chosen: null });
      expect(bare.err()).toContain('routing without a complete view of east');
    }, 60_000);

    it('a certificate flag naming an unreadable file is a usage error', async () => {
      const run = io([]);
      expect(await main(['--dc', 'x=127.0.0.1:1', '--model', 'm', '--tls-ca', `${certs.dir}/missing.pem`], run.streams)).toBe(2);
      expect(run.err()).toContain(`--tls-ca ${certs.dir}/missing.pem: cannot read: ENOENT`);
      expect(run.err()).toContain('[--tls-cert FILE --tls-key FILE]');
    });
  });

  it.each([
    [[], /at least one --dc/],
    [['--dc', 'x=127.0.0.1:1'], /--model is required/],
    [['--dc', 'nohost', '--model', 'm'], /NAME=HOST:PORT/],
    [['--dc', 'x=127.0.0.1:1', '--model', 'm', '--policy', 'best'], /unknown policy/],
    [['--dc', 'x=127.0.0.1:1', '--model', 'm', '--prefill-tokens-per-ms=-1'], /≥ 0/],
  ])('exits 2 on %j', async (argv, message) => {
    const run = io([]);
    expect(await main(argv, run.streams)).toBe(2);
    expect(run.err()).toMatch(message);
    expect(run.err()).toContain('usage: global-router');
  });

  it('passes a request line\'s TTFT target to the router (the triage reads it)', () => {
    expect(parseRequestLine('{"tokens":[1],"ttftSloMs":2500}', 'llama')).toEqual({ model: 'llama', tokens: [1], ttftSloMs: 2500 });
    expect(parseRequestLine('{"tokens":[1]}', 'llama')).not.toHaveProperty('ttftSloMs');
  });

  it.each([
    ['{"tokens":[1,-2]}', /integer/],
    ['{"tokens":"1,2"}', /"tokens"/],
    ['{"tokens":[1],"model":3}', /"model"/],
    ['{"tokens":[1],"ttftSloMs":0}', /"ttftSloMs"/],
    ['{"tokens":[1],"ttftSloMs":"2s"}', /"ttftSloMs"/],
    ['[1,2]', /"tokens"/],
  ])('rejects the request line %s', (line, message) => {
    expect(() => parseRequestLine(line, 'llama')).toThrow(message);
  });
});
