import * as http from 'http';
import type { AddressInfo } from 'net';
import { MetricsScraper, buildPoolLoad } from '../../src/load';
import { pool, producer, worker } from './fixtures';
import { whileCollecting } from '../support/gc';
import { waitFor } from '../support/waitFor';

/** A real vLLM-like /metrics endpoint whose body and status the test switches. */
class MetricsServer {
  status = 200;
  body = '';
  hang = false;
  requests = 0;
  private waiters: { n: number; resolve: () => void }[] = [];
  readonly server = http.createServer((_req, res) => {
    this.requests++;
    this.waiters = this.waiters.filter((w) => (this.requests >= w.n ? (w.resolve(), false) : true));
    if (this.hang) return;
    res.writeHead(this.status, { 'content-type': 'text/plain; version=0.0.4' }).end(this.body);
  });
  port = 0;

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }
  get url(): string {
    return `http://127.0.0.1:${this.port}/metrics`;
  }
  /** Resolves when the server has seen `n` requests in total. */
  requestCount(n: number): Promise<void> {
    return new Promise((resolve) => (this.requests >= n ? resolve() : this.waiters.push({ n, resolve })));
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const vllm = (usage: Record<string, number>): string =>
  [
    '# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.',
    '# TYPE vllm:kv_cache_usage_perc gauge',
    ...Object.entries(usage).map(([engine, u]) => `vllm:kv_cache_usage_perc{engine="${engine}",model_name="meta/llama"} ${u}`),
    'vllm:num_requests_running{engine="0",model_name="meta/llama"} 1.0',
  ].join('\n') + '\n';

const asObject = (s: MetricsScraper) =>
  Object.fromEntries([...s.usage()].map(([id, ranks]) => [String(id), Object.fromEntries(ranks)]));

describe('MetricsScraper against real HTTP servers', () => {
  const servers: MetricsServer[] = [];
  const scrapers: MetricsScraper[] = [];
  afterEach(async () => {
    scrapers.splice(0).forEach((s) => s.close());
    await Promise.all(servers.splice(0).map((s) => (s.server.listening ? s.stop() : undefined)));
  });
  async function server(body = ''): Promise<MetricsServer> {
    const s = new MetricsServer();
    s.body = body;
    servers.push(s);
    await s.listen();
    return s;
  }
  function scraper(windowMs = 1000): MetricsScraper {
    const s = new MetricsScraper(windowMs);
    scrapers.push(s);
    return s;
  }

  test('a successful scrape records usage per declared rank; a failed one clears it until the next success', async () => {
    const a = await server(vllm({ 2: 0.5, 3: 0.25, 4: 0.9 }));
    const s = scraper();
    s.setTargets([{ workerId: 7n, url: a.url, dpStartRank: 2, dpSize: 2 }]);
    await s.scrapeAll();
    expect(asObject(s)).toEqual({ 7: { 2: 0.5, 3: 0.25 } });

    a.status = 500;
    await s.scrapeAll();
    expect(asObject(s)).toEqual({});

    a.status = 200;
    a.body = vllm({ 2: 0.75 });
    await s.scrapeAll();
    expect(asObject(s)).toEqual({ 7: { 2: 0.75 } });

    await a.stop(); // connection refused
    await s.scrapeAll();
    expect(asObject(s)).toEqual({});
  });

  test('a scrape that outlives the window is a failure, also while garbage collections run', async () => {
    const a = await server(vllm({ 0: 0.5 }));
    const s = scraper(100);
    s.setTargets([{ workerId: 1n, url: a.url, dpStartRank: 0, dpSize: 1 }]);
    await s.scrapeAll();
    expect(asObject(s)).toEqual({ 1: { 0: 0.5 } });
    a.hang = true;
    // Node 20: inside AbortSignal.any(), an AbortSignal.timeout() a collection takes never fires.
    await whileCollecting(() => s.scrapeAll());
    expect(asObject(s)).toEqual({});
  });

  test('workers are scraped independently; an unlabelled single-engine server maps to its rank', async () => {
    const a = await server('vllm:kv_cache_usage_perc 0.125\n');
    const b = await server(vllm({ 0: 0.5 }));
    b.status = 404;
    const s = scraper();
    s.setTargets([
      { workerId: 1n, url: a.url, dpStartRank: 5, dpSize: 1 },
      { workerId: 2n, url: b.url, dpStartRank: 0, dpSize: 1 },
    ]);
    await s.scrapeAll();
    expect(asObject(s)).toEqual({ 1: { 5: 0.125 } });
  });

  test('setTargets keeps unchanged workers and clears changed or removed ones', async () => {
    const a = await server(vllm({ 0: 0.5 }));
    const b = await server(vllm({ 0: 0.25 }));
    const s = scraper();
    s.setTargets([
      { workerId: 1n, url: a.url, dpStartRank: 0, dpSize: 1 },
      { workerId: 2n, url: b.url, dpStartRank: 0, dpSize: 1 },
      { workerId: 3n, url: b.url, dpStartRank: 0, dpSize: 1 },
    ]);
    await s.scrapeAll();
    expect(Object.keys(asObject(s))).toEqual(['1', '2', '3']);
    s.setTargets([
      { workerId: 1n, url: a.url, dpStartRank: 0, dpSize: 1 },
      { workerId: 2n, url: b.url, dpStartRank: 0, dpSize: 2 },
    ]);
    expect(asObject(s)).toEqual({ 1: { 0: 0.5 } });
  });

  test('overlapping calls join one round', async () => {
    const a = await server(vllm({ 0: 0.5 }));
    const s = scraper();
    s.setTargets([{ workerId: 1n, url: a.url, dpStartRank: 0, dpSize: 1 }]);
    const first = s.scrapeAll();
    expect(s.scrapeAll()).toBe(first);
    await first;
    expect(a.requests).toBe(1);
  });

  test('without targets no round runs and no timer waits; targets set later start the rounds, emptied ones stop them', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const idle = timers();
    const s = scraper(20);
    s.start();
    await new Promise((resolve) => setImmediate(resolve));
    // An idle relay (no worker with a metrics url) is not woken each window for an empty round.
    expect(timers()).toBe(idle);

    const a = await server(vllm({ 0: 0.5 }));
    s.setTargets([{ workerId: 3n, url: a.url, dpStartRank: 0, dpSize: 1 }]);
    await a.requestCount(2);
    await waitFor(() => s.usage().get(3n)?.get(0) === 0.5, 'the new target scraped');

    s.setTargets([]);
    // The round in flight (or the one its timer starts) is the last.
    await waitFor(() => timers() === idle, 'no timer left once the targets are gone', 5000, 20);
    const after = a.requests;
    s.setTargets([{ workerId: 3n, url: a.url, dpStartRank: 0, dpSize: 1 }]);
    await a.requestCount(after + 2);
  });

  test('start() scrapes once per window; usage feeds pool load', async () => {
    const a = await server(vllm({ 0: 0.5, 1: 0.25 }));
    const s = scraper(20);
    s.setTargets([{ workerId: 9n, url: a.url, dpStartRank: 0, dpSize: 2 }]);
    s.start();
    await a.requestCount(3);
    // Usage older than its window is dropped, so read it right after a parsed round (a loaded box can
    // fall a window behind between the request and this line).
    const load = () => buildPoolLoad([pool(1, [worker(9n, { dpSize: 2, totalKvBlocks: 1000 })])], s.usage())[0];
    await waitFor(() => load().kvObservedRanks === 2, 'both ranks observed');
    const entry = load();
    expect(entry).toEqual({ producer: producer(1), kvUsedBlocks: 750n, totalKvBlocks: 2000n, kvObservedRanks: 2, kvExpectedRanks: 2 });

    a.body = vllm({ 0: 0.5 });
    const seen = a.requests;
    await a.requestCount(seen + 2);
    // A request received is not yet a response parsed: wait for the round after the body switch.
    const after = () => buildPoolLoad([pool(1, [worker(9n, { dpSize: 2 })])], s.usage())[0];
    await waitFor(() => after().kvObservedRanks === 1, 'one observed rank after the body switch');
    expect(after()).toMatchObject({ kvUsedBlocks: 0n, kvObservedRanks: 1 });
  });
});
