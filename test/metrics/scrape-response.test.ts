// /metrics answers gzip to a client whose Accept-Encoding allows it (Prometheus does), as is otherwise,
// in pieces across turns of the event loop; a real Prometheus scrapes the gzip answer. Over real HTTP.
import * as http from 'http';
import { gunzipSync } from 'zlib';
import { Registry } from 'prom-client';
import { SCRAPE_WRITE_PIECE_CHARS } from '../../src/config/defaults';
import type { SourceStats } from '../../src/ingest/types';
import { createRelayMetrics, type ProducerMetrics } from '../../src/metrics/registry';
import { pieces } from '../../src/metrics/scrape-response';
import { startMetricsServer, type MetricsServer } from '../../src/metrics/server';
import { describeWithPrometheus, PrometheusServer } from '../support/prometheus-server';
import { waitFor } from '../support/waitFor';

const SOURCES = 512;

function stats(i: number): SourceStats {
  return {
    source: { workerId: BigInt(1000 + i), dpRank: 0 }, events: i, blocks: 3 * i, malformed: 0, rejectedRanks: 0, overflows: 0, outOfOrder: 0, refusedPeers: 0,
    gaps: 0, replays: 1, resets: 0, ignored: 0, droppedBlockSize: 0, connections: 1, lastSequence: null, mismatchedBlockSize: 0,
  };
}

/** A relay registry with SOURCES sources (~300 KB of text: several write pieces). */
function relayRegistry(): Registry {
  const ingest = Array.from({ length: SOURCES }, (_, i) => stats(i));
  const producer: ProducerMetrics = {
    catalogPoolCount: 1, fencedGenerationsTotal: 0, topology: { ready: 1, unavailable: 0, unknown: 0 }, degradedLoadCoveragePoolCount: 0,
    ingest, ingestThreadRestarts: 0, pools: [], keptPageBytes: 0,
  };
  const lastEventAge = ingest.map((s, i) => ({ worker: s.source.workerId.toString(), dpRank: 0, seconds: i / 3 }));
  return createRelayMetrics({
    producer: () => producer,
    diagnostics: () => ({ active: { source_not_connected: 0, block_size_mismatch: 0, pool_empty_while_publishing: 0 }, lastEventAge }),
  });
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One request with exactly `headers` (fetch would ask for and undo gzip itself). */
function request(address: string, headers: Record<string, string>, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`http://${address}/metrics`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

test('gzip and identity answers decode to the same text, prom-client\'s rendering', async () => {
  const registry = relayRegistry();
  server = await startMetricsServer('127.0.0.1:0', registry, () => true);
  const gzip = await request(server.address, { 'accept-encoding': 'gzip' });
  expect(gzip.status).toBe(200);
  expect(gzip.headers).toMatchObject({ 'content-encoding': 'gzip', vary: 'Accept-Encoding', 'content-type': registry.contentType });
  const identity = await request(server.address, {});
  expect(identity.headers['content-encoding']).toBeUndefined();
  expect(identity.headers).toMatchObject({ vary: 'Accept-Encoding', 'content-type': registry.contentType });
  const text = identity.body.toString('utf8');
  expect(text.length).toBeGreaterThan(3 * SCRAPE_WRITE_PIECE_CHARS);
  expect(gunzipSync(gzip.body).toString('utf8')).toBe(text);
  // Repetitive text: the compressed answer is a fraction of it.
  expect(gzip.body.length).toBeLessThan(identity.body.length / 4);
  expect(text).toBe(await Registry.prototype.metrics.call(registry));
  expect(text).toContain(`kv_dc_relay_ingest_events_total{worker="${1000 + SOURCES - 1}",dp_rank="0"} ${SOURCES - 1}\n`);
});

test('a client that refuses gzip or prefers identity gets identity; HEAD gets the headers only', async () => {
  server = await startMetricsServer('127.0.0.1:0', relayRegistry(), () => true);
  for (const acceptEncoding of ['gzip;q=0', 'identity', 'br', 'gzip;q=0.5, identity']) {
    const a = await request(server.address, { 'accept-encoding': acceptEncoding });
    expect([acceptEncoding, a.headers['content-encoding']]).toEqual([acceptEncoding, undefined]);
    expect(a.body.toString('utf8')).toContain('# TYPE kv_dc_relay_ingest_events_total counter\n');
  }
  for (const acceptEncoding of ['gzip, deflate', '*', 'identity;q=0.5, gzip']) {
    const a = await request(server.address, { 'accept-encoding': acceptEncoding });
    expect([acceptEncoding, a.headers['content-encoding']]).toEqual([acceptEncoding, 'gzip']);
    expect(gunzipSync(a.body).toString('utf8')).toContain('# TYPE kv_dc_relay_ingest_events_total counter\n');
  }
  const head = await request(server.address, { 'accept-encoding': 'gzip' }, 'HEAD');
  expect(head.status).toBe(200);
  expect(head.headers['content-encoding']).toBe('gzip');
  expect(head.body.length).toBe(0);
});

test('pieces cut at line ends, each at least the size but the last, and join to the text', () => {
  const text = Array.from({ length: 1000 }, (_, i) => `line_${i}{a="é😀"} ${i}`).join('\n') + '\n';
  const cut = pieces(text, 100);
  expect(cut.join('')).toBe(text);
  for (const p of cut.slice(0, -1)) {
    expect(p.length).toBeGreaterThanOrEqual(100);
    expect(p.endsWith('\n')).toBe(true);
  }
  expect(pieces('', 100)).toEqual([]);
  expect(pieces('no newline', 4)).toEqual(['no newline']);
});

describeWithPrometheus('a real Prometheus scraping /metrics', () => {
  let prometheus: PrometheusServer | undefined;
  let observer: http.Server | undefined;
  afterEach(async () => {
    await prometheus?.stop();
    await new Promise((resolve) => (observer ? observer.close(resolve) : resolve(undefined)));
  });

  test('asks for gzip, gets it, and reads every series', async () => {
    server = await startMetricsServer('127.0.0.1:0', relayRegistry(), () => true);
    // A pass-through HTTP hop that notes what Prometheus asked for and what the relay answered.
    const seen: { acceptEncoding?: string; contentEncoding?: string }[] = [];
    const target = server.address;
    observer = http.createServer((req, res) => {
      const up = http.request(`http://${target}${req.url}`, { method: req.method, headers: req.headers, agent: false }, (answer) => {
        seen.push({ acceptEncoding: req.headers['accept-encoding'], contentEncoding: answer.headers['content-encoding'] });
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((resolve) => observer!.listen(0, '127.0.0.1', resolve));
    prometheus = await new PrometheusServer().start([`127.0.0.1:${(observer.address() as { port: number }).port}`]);
    await waitFor(async () => (await prometheus!.query('count(kv_dc_relay_ingest_events_total)')).some((r) => r.value[1] === String(SOURCES)), 'every source series in Prometheus', 30_000, 250);
    const [up] = await prometheus.query('up');
    expect(up.value[1]).toBe('1');
    const [last] = await prometheus.query(`kv_dc_relay_ingest_last_event_age_seconds{worker="${1000 + SOURCES - 1}"}`);
    expect(Number(last.value[1])).toBeCloseTo((SOURCES - 1) / 3, 6);
    expect(seen.length).toBeGreaterThan(0);
    for (const s of seen) expect(s).toEqual({ acceptEncoding: 'gzip', contentEncoding: 'gzip' });
  }, 60_000);
});
