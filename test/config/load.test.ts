import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ConfigError } from '../../src/config/errors';
import { loadConfigFile, parseConfigText } from '../../src/config/load';
import { DEFAULT_LIMITS, DEFAULT_QUEUES, DEFAULT_TIMING } from '../../src/config/defaults';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-config-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

const endpoint = {
  namespace: 'prod',
  component: 'backend',
  endpoint: 'generate',
  model: { name: 'llama', kvBlockSize: 16 },
  workers: [{ id: 7, kvEvents: { endpoint: 'tcp://127.0.0.1:5557' } }],
};

function errorOf(doc: unknown): string {
  try {
    parseConfigText(JSON.stringify(doc), 'relay.json');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a config error');
}

describe('config defaults', () => {
  test('a minimal YAML file gets every default', () => {
    const file = write(
      'min.yaml',
      ['dcId: dc-a', 'endpoints:', '  - namespace: prod', '    component: backend', '    endpoint: generate',
        '    model: { name: llama, kvBlockSize: 16 }', '    workers:', '      - id: 7'].join('\n'),
    );
    const cfg = loadConfigFile(file);
    expect(cfg.bind).toBe('127.0.0.1:5561');
    expect(cfg.metricsBind).toBeUndefined();
    expect(cfg.expectedUniqueBlocks).toBe(1_048_576);
    expect(cfg.limits).toEqual(DEFAULT_LIMITS);
    expect(cfg.timing).toEqual(DEFAULT_TIMING);
    expect(cfg.queues).toEqual(DEFAULT_QUEUES);
    const ep = cfg.endpoints[0];
    expect(ep.model).toEqual({ name: 'llama', kvBlockSize: 16, hashFormat: 'standard', aliases: [] });
    expect(ep.adapters).toEqual([]);
    expect(ep.workers[0]).toEqual({ id: 7n, dpSize: 1, dpStartRank: 0, live: true });
  });

  test('metricsBind as a port alone (number or string) binds loopback; IP:port is kept', () => {
    const bind = (metricsBind: unknown) => loadConfigFile(write('metrics.json', JSON.stringify({ dcId: 'dc-a', metricsBind }))).metricsBind;
    expect(bind(9464)).toBe('127.0.0.1:9464');
    expect(bind('9464')).toBe('127.0.0.1:9464');
    expect(bind(0)).toBe('127.0.0.1:0');
    expect(bind('0.0.0.0:9464')).toBe('0.0.0.0:9464');
    expect(bind('[::1]:9464')).toBe('[::1]:9464');
  });

  test('partial tunable groups keep the other defaults; JSON works the same', () => {
    const file = write('partial.json', JSON.stringify({ dcId: 'dc-a', timing: { publicationThreshold: 1 }, limits: { maxLoadSubscribers: 3 } }));
    const cfg = loadConfigFile(file);
    expect(cfg.timing).toEqual({ ...DEFAULT_TIMING, publicationThreshold: 1 });
    expect(cfg.limits).toEqual({ ...DEFAULT_LIMITS, maxLoadSubscribers: 3 });
    expect(cfg.endpoints).toEqual([]);
  });

  test('limits.reservePoolBlocks: 0 by default (tables grow), read from YAML and JSON, kept beside the other limits', () => {
    expect(DEFAULT_LIMITS.reservePoolBlocks).toBe(0);
    const yaml = loadConfigFile(write('reserve.yaml', ['dcId: dc-a', 'limits: { reservePoolBlocks: 4194304, maxTrackedBlocksPerPool: 4194304 }'].join('\n')));
    expect(yaml.limits).toEqual({ ...DEFAULT_LIMITS, reservePoolBlocks: 4_194_304, maxTrackedBlocksPerPool: 4_194_304 });
    // The parsed config written back as JSON reads the same (what a config dump or a reload sees).
    const again = loadConfigFile(write('reserve.json', JSON.stringify({ ...yaml, endpoints: [] }, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))));
    expect(again.limits).toEqual(yaml.limits);
    // At the bound (the largest filter's blocks) it is accepted.
    expect(loadConfigFile(write('reserve-max.json', JSON.stringify({ dcId: 'dc-a', limits: { reservePoolBlocks: 53_687_091 } }))).limits.reservePoolBlocks).toBe(53_687_091);
  });

  test('kvEvents defaults and u64 worker ids as strings', () => {
    const cfg = parseConfigText(
      JSON.stringify({ dcId: 'dc-a', endpoints: [{ ...endpoint, workers: [{ id: '18446744073709551615', kvEvents: { endpoint: 'tcp://h:1' } }] }] }),
      'x.json',
    );
    expect(cfg.endpoints[0].workers[0].id).toBe(18446744073709551615n);
    expect(cfg.endpoints[0].workers[0].kvEvents).toEqual({ endpoint: 'tcp://h:1', topic: '', mode: 'connect' });
  });

  test('kvEvents allowedPeers in bind mode, canonicalized as libzmq reports peers (issue 26 item 11)', () => {
    const kvEvents = { endpoint: 'tcp://0.0.0.0:5557', mode: 'bind', allowedPeers: ['10.0.0.7', '0:0:0:0:0:0:0:1', 'FE80::0001', '::ffff:7f00:1'] };
    const cfg = parseConfigText(JSON.stringify({ dcId: 'dc-a', endpoints: [{ ...endpoint, workers: [{ id: 7, kvEvents }] }] }), 'x.json');
    expect(cfg.endpoints[0].workers[0].kvEvents).toEqual({ ...kvEvents, allowedPeers: ['10.0.0.7', '::1', 'fe80::1', '127.0.0.1'], topic: '' });
  });

  test('kvEvents bind mode open to any peer only when the config says so (issue 26 item 1)', () => {
    const kvEvents = { endpoint: 'tcp://0.0.0.0:5557', mode: 'bind', allowAnyPeer: true };
    const cfg = parseConfigText(JSON.stringify({ dcId: 'dc-a', endpoints: [{ ...endpoint, workers: [{ id: 7, kvEvents }] }] }), 'x.json');
    expect(cfg.endpoints[0].workers[0].kvEvents).toEqual({ ...kvEvents, topic: '' });
  });

  test('flags beat the file', () => {
    const file = write('flags.yaml', 'dcId: dc-a\nbind: 127.0.0.1:7000\n');
    const cfg = loadConfigFile(file, { bind: '127.0.0.1:0', dcId: 'dc-b' });
    expect(cfg.bind).toBe('127.0.0.1:0');
    expect(cfg.dcId).toBe('dc-b');
    expect(() => loadConfigFile(file, { dcId: ' dc-b' })).toThrow(`${file}: dcId: must not have surrounding whitespace`);
  });

  test('bind accepts IPv4, bracketed IPv6, wildcard and port 0', () => {
    for (const bind of ['127.0.0.1:5561', '[::1]:5561', '0.0.0.0:0']) {
      expect(parseConfigText(JSON.stringify({ dcId: 'a', bind }), 'x.json').bind).toBe(bind);
    }
  });
});

describe('config errors are one line: FILE: field.path: problem', () => {
  const ep = (patch: object) => ({ dcId: 'dc-a', endpoints: [{ ...endpoint, ...patch }] });
  const cases: [string, unknown, string][] = [
    ['missing dcId', {}, 'relay.json: dcId: required'],
    ['empty dcId', { dcId: '' }, 'relay.json: dcId: must not be empty'],
    ['padded dcId', { dcId: 'dc-a ' }, 'relay.json: dcId: must not have surrounding whitespace'],
    ['unknown top-level field', { dcId: 'a', colour: 1 }, 'relay.json: colour: unknown field'],
    ['unknown nested field', { dcId: 'a', timing: { heartbeat: 1 } }, 'relay.json: timing.heartbeat: unknown field'],
    ['misspelt top-level field', { dcId: 'a', metricBind: 9464 }, 'relay.json: metricBind: unknown field (did you mean metricsBind?)'],
    ['field in another case', { dcId: 'a', dcid: 'b' }, 'relay.json: dcid: unknown field (did you mean dcId?)'],
    ['misspelt nested field', { dcId: 'a', timing: { poolHeartbeatMS: 1 } }, 'relay.json: timing.poolHeartbeatMS: unknown field (did you mean poolHeartbeatMs?)'],
    ['misspelt field of a list entry', ep({ model: { name: 'llama', kvBlocksize: 16 } }), 'relay.json: endpoints.0.model.kvBlocksize: unknown field (did you mean kvBlockSize?)'],
    ['misspelt field of a worker', ep({ workers: [{ id: 1, kvEvent: {} }] }), 'relay.json: endpoints.0.workers.0.kvEvent: unknown field (did you mean kvEvents?)'],
    ['misspelt field deep in a worker', ep({ workers: [{ id: 1, kvEvents: { endpoint: 'tcp://127.0.0.1:1', replay: 'x' } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.replay: unknown field'],
    ['misspelt etcd field', { dcId: 'a', discovery: { etcd: { endpoints: ['h:1'], prefix: 'p', leaseTTLSeconds: 5 } } }, 'relay.json: discovery.etcd.leaseTTLSeconds: unknown field (did you mean leaseTtlSeconds?)'],
    ['zero limit', { dcId: 'a', limits: { maxPoolStreamsTotal: 0 } }, 'relay.json: limits.maxPoolStreamsTotal: Too small'],
    ['timer above one year', { dcId: 'a', timing: { poolHeartbeatMs: 31_536_000_001 } }, 'relay.json: timing.poolHeartbeatMs: Too big'],
    ['zero timer', { dcId: 'a', timing: { loadWindowMs: 0 } }, 'relay.json: timing.loadWindowMs: Too small'],
    ['fractional count', { dcId: 'a', timing: { publicationThreshold: 1.5 } }, 'relay.json: timing.publicationThreshold: Invalid input'],
    ['queue bytes below one frame', { dcId: 'a', queues: { publicationQueueBytes: 4_194_368 } }, 'relay.json: queues.publicationQueueBytes: Too small'],
    ['message bytes below max frame', { dcId: 'a', queues: { maxMessageBytes: 4_194_368 } }, 'relay.json: queues.maxMessageBytes: Too small'],
    ['bind by name', { dcId: 'a', bind: 'localhost:1' }, 'relay.json: bind: must be a numeric IP:port'],
    ['bind port out of range', { dcId: 'a', bind: '127.0.0.1:70000' }, 'relay.json: bind: must be a numeric IP:port'],
    ['metricsBind by name', { dcId: 'a', metricsBind: 'localhost:9464' }, 'relay.json: metricsBind: must be a port (0..65535) or a numeric IP:port'],
    ['metricsBind port out of range', { dcId: 'a', metricsBind: 65_536 }, 'relay.json: metricsBind: must be a port (0..65535) or a numeric IP:port'],
    ['metricsBind port string out of range', { dcId: 'a', metricsBind: '70000' }, 'relay.json: metricsBind: must be a port (0..65535) or a numeric IP:port'],
    ['too many expected blocks', { dcId: 'a', expectedUniqueBlocks: 53_687_092 }, 'relay.json: expectedUniqueBlocks: Too big'],
    ['zero expected blocks', { dcId: 'a', expectedUniqueBlocks: 0 }, 'relay.json: expectedUniqueBlocks: Too small'],
    ['negative pool reservation', { dcId: 'a', limits: { reservePoolBlocks: -1 } }, 'relay.json: limits.reservePoolBlocks: Too small'],
    ['fractional pool reservation', { dcId: 'a', limits: { reservePoolBlocks: 1.5 } }, 'relay.json: limits.reservePoolBlocks: Invalid input'],
    ['pool reservation as text', { dcId: 'a', limits: { reservePoolBlocks: '4M' } }, 'relay.json: limits.reservePoolBlocks: Invalid input'],
    ['absurd pool reservation (a typo)', { dcId: 'a', limits: { reservePoolBlocks: 53_687_092 } }, 'relay.json: limits.reservePoolBlocks: Too big'],
    ['pool reservation past the tracked-block bound', { dcId: 'a', limits: { reservePoolBlocks: 2_000, maxTrackedBlocksPerPool: 1_000 } }, 'relay.json: limits.reservePoolBlocks: must not exceed limits.maxTrackedBlocksPerPool'],
    ['padded namespace', ep({ namespace: ' prod' }), 'relay.json: endpoints.0.namespace: must not have surrounding whitespace'],
    ['empty component', ep({ component: '' }), 'relay.json: endpoints.0.component: must not be empty'],
    ['padded model name', ep({ model: { name: 'llama\t', kvBlockSize: 16 } }), 'relay.json: endpoints.0.model.name: must not have surrounding whitespace'],
    ['padded alias', ep({ model: { name: 'llama', kvBlockSize: 16, aliases: ['chat '] } }), 'relay.json: endpoints.0.model.aliases.0: must not have surrounding whitespace'],
    ['missing kvBlockSize', ep({ model: { name: 'llama' } }), 'relay.json: endpoints.0.model.kvBlockSize: required'],
    ['bad hash format', ep({ model: { name: 'llama', kvBlockSize: 16, hashFormat: 'v2' } }), 'relay.json: endpoints.0.model.hashFormat: Invalid option'],
    ['bad worker type', ep({ workerType: 'router' }), 'relay.json: endpoints.0.workerType: Invalid option'],
    ['bad needs', ep({ needs: [['decode', 'frontend']] }), 'relay.json: endpoints.0.needs.0.1: Invalid option'],
    ['worker needs without its own workerType', ep({ workers: [{ id: 1, needs: [['prefill']] }] }), "relay.json: endpoints.0.workers.0.needs: a worker's needs go with its own workerType"],
    ['empty needs alternative', ep({ needs: [[]] }), 'relay.json: endpoints.0.needs.0: a needs alternative must not be empty'],
    ['empty identity map', ep({ indexerIdentity: { semantics: {} } }), 'relay.json: endpoints.0.indexerIdentity.semantics: must have 1..32 entries'],
    ['long identity key', ep({ indexerIdentity: { routingScope: { ['k'.repeat(129)]: 'v' } } }), 'relay.json: endpoints.0.indexerIdentity.routingScope.' + 'k'.repeat(129) + ': keys must be 1..128 UTF-8 bytes'],
    ['empty identity value', ep({ indexerIdentity: { routingScope: { k: '' } } }), 'relay.json: endpoints.0.indexerIdentity.routingScope.k: values must be 1..1024 UTF-8 bytes'],
    ['duplicate worker', ep({ workers: [{ id: 1 }, { id: 1 }] }), 'relay.json: endpoints.0.workers.1.id: duplicate worker id 1'],
    ['negative worker id', ep({ workers: [{ id: -1 }] }), 'relay.json: endpoints.0.workers.0.id: must not be negative'],
    ['unsafe worker id', ep({ workers: [{ id: 2 ** 60 }] }), 'relay.json: endpoints.0.workers.0.id: is above 2^53: write it as a quoted decimal string'],
    ['u64 overflow', ep({ workers: [{ id: '18446744073709551616' }] }), 'relay.json: endpoints.0.workers.0.id: must fit in 64 bits'],
    ['dpSize above 4096', ep({ workers: [{ id: 1, dpSize: 4097 }] }), 'relay.json: endpoints.0.workers.0.dpSize: Too big'],
    ['bad kvEvents endpoint', ep({ workers: [{ id: 1, kvEvents: { endpoint: '127.0.0.1:5557' } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.endpoint: must be a ZMQ endpoint'],
    ['bad kvEvents mode', ep({ workers: [{ id: 1, kvEvents: { endpoint: 'tcp://h:1', mode: 'listen' } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.mode: Invalid option'],
    ['allowedPeers in connect mode', ep({ workers: [{ id: 1, kvEvents: { endpoint: 'tcp://h:1', allowedPeers: ['10.0.0.7'] } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.allowedPeers: allowedPeers applies to mode bind'],
    ['bind mode without allowedPeers', ep({ workers: [{ id: 1, kvEvents: { endpoint: 'tcp://*:1', mode: 'bind' } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.allowedPeers: mode bind needs allowedPeers'],
    ['bind mode, allowAnyPeer false', ep({ workers: [{ id: 1, kvEvents: { endpoint: 'tcp://*:1', mode: 'bind', allowAnyPeer: false } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.allowedPeers: mode bind needs allowedPeers'],
    ['allowAnyPeer with allowedPeers', ep({ workers: [{ id: 1, kvEvents: { endpoint: 'tcp://*:1', mode: 'bind', allowAnyPeer: true, allowedPeers: ['10.0.0.7'] } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.allowAnyPeer: allowAnyPeer: true contradicts allowedPeers'],
    ['allowAnyPeer in connect mode', ep({ workers: [{ id: 1, kvEvents: { endpoint: 'tcp://h:1', allowAnyPeer: true } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.allowAnyPeer: allowAnyPeer applies to mode bind'],
    ['allowedPeers not an IP', ep({ workers: [{ id: 1, kvEvents: { endpoint: 'tcp://*:1', mode: 'bind', allowedPeers: ['engine-7'] } }] }), 'relay.json: endpoints.0.workers.0.kvEvents.allowedPeers.0: must be an IP address'],
    ['bad health url', ep({ workers: [{ id: 1, health: { url: 'ftp://x/health' } }] }), 'relay.json: endpoints.0.workers.0.health.url:'],
    ['bad metrics format', ep({ workers: [{ id: 1, metrics: { url: 'http://h/metrics', format: 'sglang' } }] }), 'relay.json: endpoints.0.workers.0.metrics.format: Invalid input'],
    ['adapter on unknown worker', ep({ adapters: [{ name: 'l', servedModel: 'm', workers: [9] }] }), 'relay.json: endpoints.0.adapters.0.workers.0: unknown worker id 9'],
    ['duplicate endpoint', { dcId: 'a', endpoints: [endpoint, endpoint] }, 'relay.json: endpoints.1: duplicate endpoint prod/backend/generate (also endpoints.0)'],
    ['worker in two endpoints', { dcId: 'a', endpoints: [endpoint, { ...endpoint, endpoint: 'other' }] }, 'relay.json: endpoints.1.workers.0.id: worker id 7 is also in endpoints.0'],
    ['not a mapping', [1, 2], 'relay.json: (root): must be a mapping of config fields'],
  ];
  test.each(cases)('%s', (_name, doc, expected) => {
    const line = errorOf(doc);
    expect(line.slice(0, expected.length)).toBe(expected);
    expect(line).not.toContain('\n');
  });

  test('syntax errors, duplicate YAML keys, unknown extension and missing file', () => {
    const bad = write('bad.json', '{"dcId": ');
    expect(() => loadConfigFile(bad)).toThrow(new RegExp(`^${bad}: \\(root\\): invalid JSON: `));
    const dup = write('dup.yaml', 'dcId: a\ndcId: b\n');
    expect(() => loadConfigFile(dup)).toThrow(new RegExp(`^${dup}: \\(root\\): invalid YAML at line 2: .*unique`));
    const toml = write('relay.toml', 'dcId = "a"');
    expect(() => loadConfigFile(toml)).toThrow(`${toml}: (file): unsupported extension`);
    const missing = path.join(dir, 'missing.yaml');
    expect(() => loadConfigFile(missing)).toThrow(`${missing}: (file): cannot read: ENOENT`);
  });
});
