// A relay process started with `serve --tls-*` flags (mTLS), fed by a simulated engine, queried by
// the real `query` and `watch` processes with and without client TLS flags; its /metrics listener stays a
// separate plaintext HTTP listener on the loopback address it was given. A certificate problem is a
// config error: one line, exit 2.
import type { ChildProcess } from 'child_process';
import { X509Certificate } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { SimulatedEngine } from '../../src/sim';
import { CertificateFactory } from '../support/certificates';
import { loggedAddress, runCli, spawnCli } from '../support/cli-process';
import { BS, endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { waitForValue } from '../support/waitFor';

const certs = new CertificateFactory();
const ca = certs.ca('ca');
const relayCert = certs.server('relay', ca);
const router = certs.client('router', ca);
let engine: SimulatedEngine | undefined;
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  await engine?.stop();
  certs.remove();
});

const tlsFlags = ['--tls-cert', relayCert.cert, '--tls-key', relayCert.key, '--tls-ca', ca.cert, '--tls-require-client-cert'];

test('serve --tls-* with mTLS: query and watch with client certificate flags answer; plaintext and certificate-less queries get nothing', async () => {
  engine = await new SimulatedEngine({ modelName: 'llama' }).start();
  const file = path.join(certs.dir, 'relay.json');
  fs.writeFileSync(file, JSON.stringify(relayConfig([endpointConfig([workerConfig(7, engine)])])));
  child = spawnCli(['serve', '--config', file, ...tlsFlags]);
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const address = await waitForValue(() => {
    if (child!.exitCode !== null) throw new Error(`serve exited: ${stderr}`);
    return loggedAddress(stderr, 'listening');
  }, 'the relay to listen', 20_000, 20);
  expect(stderr).toContain('"msg":"tls enabled"');
  expect(stderr).toContain('"clientCert":"required"');
  await engine.waitForSubscribers();

  const prompt = Array.from({ length: 3 * BS }, (_, i) => 200 + i);
  await engine.publish([{ type: 'BlockStored', blockHashes: [701n, 702n], parentBlockHash: null, tokenIds: prompt.slice(0, 2 * BS), blockSize: BS }]);
  const query = ['query', address, '--model', 'llama', '--tokens', prompt.join(','), '--json', '--timeout-ms', '15000'];
  const depth = await waitForValue(async () => {
    const r = await runCli([...query, '--tls-ca', ca.cert, '--tls-cert', router.cert, '--tls-key', router.key]);
    if (r.code !== 0) throw new Error(`query failed (${r.code}): ${r.stderr}${r.stdout}`);
    const blocks = (JSON.parse(r.stdout) as { pools: { matchedBlocks: number | null }[] }).pools[0]?.matchedBlocks;
    return blocks === 2 ? blocks : undefined;
  }, 'query over mTLS to see the stored blocks', 60_000, 200);
  expect(depth).toBe(2);

  const quick = ['--timeout-ms', '1500'];
  const plaintext = await runCli([...query, ...quick]);
  expect(plaintext).toMatchObject({ code: 1, stdout: expect.stringContaining('"error":"noCatalog"') });
  const noClientCert = await runCli([...query, ...quick, '--tls-ca', ca.cert]);
  expect(noClientCert).toMatchObject({ code: 1, stdout: expect.stringContaining('"error":"noCatalog"') });

  // The metrics listener: its own port, plaintext HTTP, on the loopback address configured.
  const metrics = await waitForValue(() => loggedAddress(stderr, 'metrics listening'), 'the metrics listener', 20_000, 20);
  expect(metrics).toMatch(/^127\.0\.0\.1:\d+$/);
  expect(metrics).not.toBe(address);
  const res = await fetch(`http://${metrics}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).toContain('kv_dc_relay_catalog_pool_count 1');
  const expiry = Math.floor(Date.parse(new X509Certificate(fs.readFileSync(relayCert.cert)).validTo) / 1000);
  expect(text).toContain(`kv_dc_relay_tls_certificate_expiry_timestamp_seconds ${expiry}`);
  expect(text).toContain('kv_dc_relay_tls_certificate_reloads_total 0');
  await expect(fetch(`http://${address}/metrics`)).rejects.toThrow();

  // watch over mTLS: the catalog arrives, SIGINT ends it with 0.
  const watch = spawnCli(['watch', address, '--json', '--tls-ca', ca.cert, '--tls-cert', router.cert, '--tls-key', router.key]);
  let out = '';
  watch.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  const watchExit = new Promise<number | null>((resolve) => watch.on('exit', resolve));
  try {
    await waitForValue(() => out.includes('"type":"catalog"') && !out.includes('"lost":true'), 'watch to print the catalog over mTLS', 20_000, 50);
    watch.kill('SIGINT');
    expect(await watchExit).toBe(0);
  } finally {
    watch.kill('SIGKILL');
  }
}, 180_000);

test('a certificate problem is a config error: one line naming the file and field, exit 2', async () => {
  const file = path.join(certs.dir, 'plain.json');
  fs.writeFileSync(file, JSON.stringify({ dcId: 'dc-a', bind: '127.0.0.1:0' }));
  const missing = path.join(certs.dir, 'missing-key.pem');
  const r = await runCli(['serve', '--config', file, '--tls-cert', relayCert.cert, '--tls-key', missing]);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe(`${file}: tls.key: ${missing}: cannot read: ENOENT\n`);
  const noCa = await runCli(['serve', '--config', file, '--tls-cert', relayCert.cert, '--tls-key', relayCert.key, '--tls-require-client-cert']);
  expect(noCa.code).toBe(2);
  expect(noCa.stderr).toBe(`${file}: tls.ca: requireClientCert needs a CA to verify client certificates against\n`);
}, 120_000);
