// The misconfiguration rules and their log lines over snapshots written by hand, on a clock the test
// drives: each warning begins once its condition lasted its threshold, is said once (again only
// after the repeat interval), ends with one info line, and names worker, rank and endpoint.
import { Writable } from 'stream';
import { Diagnostics } from '../../src/diagnostics/diagnostics';
import { RecentLatency } from '../../src/diagnostics/recent-latency';
import type { PoolSnapshot, RelaySnapshot, SourceSnapshot } from '../../src/diagnostics/snapshot';
import type { SourceStats } from '../../src/ingest/types';
import { createLogger } from '../../src/log';

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

function stats(over: Partial<SourceStats> = {}): SourceStats {
  return {
    source: { workerId: 7n, dpRank: 0 },
    events: 0,
    blocks: 0,
    malformed: 0,
    rejectedRanks: 0,
    overflows: 0,
    outOfOrder: 0,
    refusedPeers: 0,
    gaps: 0,
    replays: 0,
    resets: 0,
    ignored: 0,
    droppedBlockSize: 0,
    connections: 1,
    lastSequence: null,
    mismatchedBlockSize: 0,
    ...over,
  };
}

function source(over: Partial<SourceStats> = {}, dpRank = 0): SourceSnapshot {
  return { worker: '7', dpRank, pool: 'pool-a', endpoint: `tcp://10.1.2.3:${5557 + dpRank}`, mode: 'connect', kvBlockSize: 16, stats: stats({ source: { workerId: 7n, dpRank }, ...over }) };
}

function pool(over: Partial<PoolSnapshot> = {}): PoolSnapshot {
  return { pool: 'pool-a', endpoint: 'prod/backend/generate', model: 'llama', kvBlockSize: 16, trackedBlocks: 0, filterLoad: 0, subscribers: 0, deltaLatencyP99Ms: null, ...over };
}

/** Diagnostics over `current` (changed by the test between rounds), on a clock the test sets. */
function harness(thresholds = {}) {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as LogLine);
      done();
    },
  });
  let now = 0;
  const state: { current: RelaySnapshot } = { current: { sources: [], pools: [] } };
  const diagnostics = new Diagnostics({
    sample: () => state.current,
    relayInfo: () => ({ dcId: 'dc-a', relayIncarnation: '1', address: '127.0.0.1:1', uptimeSeconds: now / 1000 }),
    logger: createLogger({ destination: sink }),
    now: () => now,
    thresholds,
  });
  /** Sets the clock to `t` ms, runs a round, and returns the lines it logged. */
  const at = (t: number, snapshot?: RelaySnapshot): LogLine[] => {
    now = t;
    if (snapshot) state.current = snapshot;
    const before = lines.length;
    diagnostics.tick();
    return lines.slice(before);
  };
  return { diagnostics, at, lines };
}

describe('a source not connected', () => {
  test('is warned about once it stayed so 10 s after start, once, then again after 10 min; its connection ends it', () => {
    const { at } = harness();
    const down = { sources: [source({ connections: 0 })], pools: [pool()] };
    expect(at(0, down)).toEqual([]);
    expect(at(9_000)).toEqual([]);
    const [warning, ...more] = at(10_000);
    expect(more).toEqual([]);
    expect(warning).toMatchObject({
      level: 40,
      msg: 'KV source not connected',
      check: 'source_not_connected',
      worker: '7',
      dpRank: 0,
      endpoint: 'tcp://10.1.2.3:5557',
      mode: 'connect',
      pool: 'pool-a',
      since: 'start',
      forSeconds: 10,
    });
    expect(warning.action).toMatch(/no engine publisher answers there/);
    // Rate-limited: nothing while it holds, until the repeat interval passed.
    for (let t = 11_000; t < 610_000; t += 50_000) expect(at(t)).toEqual([]);
    expect(at(610_000)).toEqual([expect.objectContaining({ level: 40, msg: 'KV source not connected', repeated: 'still holds', forSeconds: 610 })]);
    const up = { sources: [source({ connections: 1 })], pools: [pool()] };
    expect(at(611_000, up)).toEqual([expect.objectContaining({ level: 30, msg: 'KV source connected', worker: '7', dpRank: 0, endpoint: 'tcp://10.1.2.3:5557' })]);
    expect(at(612_000)).toEqual([]);
  });

  test('taken away by the config while warned about: no line says it connected', () => {
    const { at } = harness();
    at(0, { sources: [source({ connections: 0 })], pools: [pool()] });
    expect(at(10_000)).toHaveLength(1);
    expect(at(11_000, { sources: [], pools: [] })).toEqual([]);
  });

  test('is warned about 10 s after a loss, saying so; a bind-mode source says no engine dialled in', () => {
    const { at } = harness();
    expect(at(0, { sources: [source({ connections: 1 }), { ...source({ connections: 0 }, 1), mode: 'bind' }], pools: [pool()] })).toEqual([]);
    const [bindWarning] = at(10_000);
    expect(bindWarning).toMatchObject({ dpRank: 1, mode: 'bind', since: 'start' });
    expect(bindWarning.action).toMatch(/no engine has dialled this bound endpoint/);
    expect(at(20_000, { sources: [source({ connections: 0 }), { ...source({ connections: 0 }, 1), mode: 'bind' }], pools: [pool()] })).toEqual([]);
    expect(at(29_999)).toEqual([]);
    expect(at(30_000)).toEqual([expect.objectContaining({ msg: 'KV source not connected', dpRank: 0, since: 'connection lost', forSeconds: 10 })]);
  });

  test('many at once: ten lines and one summary per round; the status view lists every one', () => {
    const { at, diagnostics } = harness();
    const sources = Array.from({ length: 25 }, (_, r) => source({ connections: 0 }, r));
    at(0, { sources, pools: [pool()] });
    const lines = at(10_000);
    expect(lines).toHaveLength(11);
    expect(lines.slice(0, 10).every((l) => l.msg === 'KV source not connected')).toBe(true);
    expect(lines[10]).toMatchObject({ level: 40, msg: '15 more KV sources not connected (kv-dc-relay status lists them)', check: 'source_not_connected', more: 15 });
    expect(diagnostics.status().warnings.filter((w) => w.check === 'source_not_connected')).toHaveLength(25);
    expect(diagnostics.metrics().active).toEqual({ source_not_connected: 25, block_size_mismatch: 0, pool_empty_while_publishing: 0 });
  });
});

describe('a block-size mismatch', () => {
  test('is warned about at the first dropped store with the configured and the received size, and ends a minute after the last', () => {
    const { at, diagnostics } = harness();
    expect(at(0, { sources: [source()], pools: [pool()] })).toEqual([]);
    const dropping = { sources: [source({ events: 5, droppedBlockSize: 5, mismatchedBlockSize: 32, lastSequence: 4n })], pools: [pool()] };
    const [warning, ...more] = at(1_000, dropping);
    expect(more).toEqual([]);
    expect(warning).toMatchObject({
      level: 40,
      msg: "KV events dropped: the engine's block size is not the pool's kvBlockSize",
      check: 'block_size_mismatch',
      worker: '7',
      dpRank: 0,
      endpoint: 'tcp://10.1.2.3:5557',
      configuredBlockSize: 16,
      receivedBlockSize: 32,
      droppedStores: 5,
    });
    expect(warning.action).toMatch(/set model\.kvBlockSize of this endpoint to the engine's block size \(32/);
    const mismatch = (lines: LogLine[]) => lines.filter((l) => l.check === 'block_size_mismatch');
    expect(mismatch(at(30_000, { sources: [source({ events: 9, droppedBlockSize: 9, mismatchedBlockSize: 32, lastSequence: 8n })], pools: [pool()] }))).toEqual([]);
    expect(diagnostics.status().sources[0]).toMatchObject({ kvBlockSize: 16, receivedBlockSize: 32, drops: { blockSize: 9 } });
    expect(mismatch(at(89_999))).toEqual([]);
    expect(mismatch(at(90_000))).toEqual([expect.objectContaining({ level: 30, msg: 'KV events no longer dropped for their block size', worker: '7' })]);
  });
});

describe('a pool that stays empty while its engines publish', () => {
  /** Round t of a source that publishes `n` more events per second (with `kind` of them dropped/ignored). */
  const publishing = (t: number, kind: 'blockSize' | 'ignored' | 'stored', tracked = 0): RelaySnapshot => {
    const n = t / 1000;
    const counts = kind === 'ignored' ? { ignored: n } : kind === 'blockSize' ? { events: n, droppedBlockSize: n, mismatchedBlockSize: 32 } : { events: n };
    return { sources: [source({ ...counts, lastSequence: BigInt(n) })], pools: [pool({ trackedBlocks: tracked })] };
  };

  test.each([
    ['ignored', /every event was ignored: another storage tier/],
    ['stored', /events arrived but none left a block stored/],
    ['blockSize', /stores have a block size other than the pool's kvBlockSize/],
  ] as const)('is warned about 10 s after they began (%s), with the likely cause', (kind, cause) => {
    const { at } = harness();
    at(0, { sources: [source()], pools: [pool()] });
    for (let t = 1_000; t < 11_000; t += 1_000) expect(at(t, publishing(t, kind)).filter((l) => l.check === 'pool_empty_while_publishing')).toEqual([]);
    const [warning] = at(11_000, publishing(11_000, kind)).filter((l) => l.check === 'pool_empty_while_publishing');
    expect(warning).toMatchObject({ level: 40, msg: 'pool stays empty while its engines publish', pool: 'pool-a', endpoint: 'prod/backend/generate', model: 'llama', workers: ['7'], forSeconds: 10 });
    expect(warning.action).toMatch(cause);
    // Blocks landing end it.
    expect(at(12_000, publishing(12_000, kind, 3)).filter((l) => l.check === 'pool_empty_while_publishing')).toEqual([
      expect.objectContaining({ level: 30, msg: 'pool holds blocks', pool: 'pool-a' }),
    ]);
  });

  test('is not warned about while it holds blocks, nor once its engines went quiet', () => {
    const { at, lines } = harness();
    for (let t = 0; t <= 30_000; t += 1_000) at(t, publishing(t, 'stored', 5));
    // The engine stops publishing, and its blocks go (a reset): an empty pool of a quiet engine.
    for (let t = 31_000; t <= 90_000; t += 1_000) at(t, publishing(30_000, 'stored', 0));
    expect(lines.filter((l) => l.check === 'pool_empty_while_publishing')).toEqual([]);
  });
});

test('the status view: per source its state, last sequence, the age of its last event, gaps, resets and drops; per pool its numbers', () => {
  const { at, diagnostics } = harness();
  at(0, { sources: [source({ connections: 0 })], pools: [pool({ trackedBlocks: 0 })] });
  at(2_000, {
    sources: [source({ connections: 1, events: 40, lastSequence: 39n, gaps: 2, resets: 1, replays: 2, malformed: 3, outOfOrder: 4 })],
    pools: [pool({ trackedBlocks: 120, filterLoad: 0.25, subscribers: 2, deltaLatencyP99Ms: 3.5 })],
  });
  at(3_500);
  const status = diagnostics.status();
  expect(status.relay).toEqual({ dcId: 'dc-a', relayIncarnation: '1', address: '127.0.0.1:1', uptimeSeconds: 3.5 });
  expect(status.sources).toEqual([
    {
      worker: '7',
      dpRank: 0,
      pool: 'pool-a',
      endpoint: 'tcp://10.1.2.3:5557',
      mode: 'connect',
      connected: true,
      notConnectedSeconds: null,
      connections: 1,
      lastSequence: '39',
      lastEventAgeSeconds: 1.5,
      events: 40,
      gaps: 2,
      replays: 2,
      resets: 1,
      drops: { malformed: 3, outOfOrder: 4, rejectedRanks: 0, overflows: 0, blockSize: 0 },
      kvBlockSize: 16,
      receivedBlockSize: null,
    },
  ]);
  expect(status.pools).toEqual([{ pool: 'pool-a', endpoint: 'prod/backend/generate', model: 'llama', kvBlockSize: 16, trackedBlocks: 120, filterLoad: 0.25, subscribers: 2, deltaLatencyP99Ms: 3.5 }]);
  expect(status.warnings).toEqual([]);
  expect(diagnostics.metrics().lastEventAge).toEqual([{ worker: '7', dpRank: 0, seconds: 1.5 }]);
  // JSON all the way (u64 values as strings).
  expect(JSON.parse(JSON.stringify(status))).toEqual(status);
});

test("a pool's recent delta latency p99: nearest rank over the deltas of the last minute", () => {
  const recent = new RecentLatency(512, 60_000);
  expect(recent.p99('p', 0)).toBeNull();
  for (let i = 1; i <= 100; i++) recent.observe('p', i, 1_000);
  expect(recent.p99('p', 1_000)).toBe(99);
  recent.observe('p', 500, 50_000);
  expect(recent.p99('p', 61_000)).toBe(500); // the first hundred are older than a minute
  expect(recent.p99('p', 120_000)).toBeNull();
  // A fixed ring: the oldest give way.
  for (let i = 0; i < 512; i++) recent.observe('q', 1, 0);
  recent.observe('q', 9, 0);
  expect(recent.p99('q', 0)).toBe(1);
  recent.keep(new Set(['q']));
  expect(recent.p99('p', 50_000)).toBeNull();
});
