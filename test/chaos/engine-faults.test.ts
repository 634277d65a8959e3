// Engine faults under load, one per worker of one pool, all at once, against a relay process:
//   w1  publisher killed mid-burst, a new process on the same ports with a new sequence;
//   w2  the engine restarts behind the same sockets (sequence back to 0);
//   w3  the replay endpoint is down when a batch is lost on the wire;
//   w4  the PUB connection is reset, blackholed, then delayed (a TCP proxy in between);
//   w5  rank 1 of 2 goes silent while rank 0 keeps publishing, then comes back.
// Each ends in the specified reset/replay (per-source ingest counters), and at rest the consumer's
// replica holds exactly what a model fed the same events holds.
import { RelayClient } from '../../src/client';
import { SimulatedEngine, type SimulatedEngineOptions } from '../../src/sim';
import { EngineLoad } from '../support/engine-load';
import { PoolModel, imageMismatch } from '../support/pool-model';
import { BS, endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { metricSum, RelayProcess } from '../support/relay-process';
import { TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/waitFor';
import { runAlone } from '../support/exclusive';

const SLOW_MS = 40_000;

let relay: RelayProcess | undefined;
let client: RelayClient | undefined;
let load: EngineLoad | undefined;
const engines: SimulatedEngine[] = [];
const proxies: TcpProxy[] = [];
runAlone();

afterEach(async () => {
  await load?.stop();
  client?.close();
  await relay?.close();
  await Promise.allSettled([...engines.splice(0).map((e) => e.stop()), ...proxies.splice(0).map((p) => p.close())]);
});

function engine(seed: number, o: SimulatedEngineOptions = {}): Promise<SimulatedEngine> {
  const e = new SimulatedEngine({ modelName: 'llama', workload: { blockSize: BS, seed, capacityBlocks: 64, maxConversationBlocks: 24 }, ...o });
  engines.push(e);
  return e.start();
}

async function proxy(endpoint: string): Promise<TcpProxy> {
  const p = await TcpProxy.forEndpoint(endpoint).start();
  proxies.push(p);
  return p;
}

const port = (endpoint: string | undefined): number => Number(/:(\d+)$/.exec(endpoint ?? '')![1]);
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('engine faults under load end in the specified reset/replay and the replica equals the model', async () => {
  const model = new PoolModel(BS);
  const e1 = await engine(1);
  const e2 = await engine(2);
  const e3 = await engine(3);
  const e4 = await engine(4);
  const e5 = await engine(5, { dpSize: 2 });
  const replay3 = await proxy(e3.replayEndpoint!);
  const pub4 = await proxy(e4.pubEndpoint);
  const workers = [
    workerConfig(1, e1),
    workerConfig(2, e2),
    { ...workerConfig(3, e3), kvEvents: { endpoint: e3.pubEndpoint, replayEndpoint: `tcp://${replay3.endpoint}` } },
    { ...workerConfig(4, e4), kvEvents: { endpoint: `tcp://${pub4.endpoint}`, replayEndpoint: e4.replayEndpoint } },
    workerConfig(5, e5),
  ];
  relay = await new RelayProcess(relayConfig([endpointConfig(workers)])).start();
  client = new RelayClient(relay.address, { subscriberId: 'chaos-engines', backoff: { initialMs: 20, maxMs: 200 } });
  client.start();
  await Promise.all(engines.map((e) => e.waitForSubscribers()));
  load = new EngineLoad();
  [e1, e2, e3, e4, e5].forEach((e, i) => {
    model.follow(e, i + 1);
    load!.drive(i + 1, e);
  });
  await pause(500);
  const metrics = async (name: string, source: string): Promise<number> => metricSum(await relay!.metricsText(), name, source);

  // w1: killed while a burst is being sent; its successor binds the same ports and starts at 0.
  void e1.step(40);
  await e1.stop();
  model.reset('1/0');
  // Until e1b takes over, the load loop still steps the stopped e1: the model would count batches
  // that never left it (the replica then "missed" them).
  load.silent.add('1/0');
  const e1b = await engine(11, { port: port(e1.pubEndpoint), replayPort: port(e1.replayEndpoint) });
  model.follow(e1b, 1);
  load.drive(1, e1b);
  load.silent.delete('1/0');

  // w2: restarts behind the same sockets.
  e2.restart();
  model.reset('2/0');

  // w3: a batch is lost on the wire while the replay endpoint is unreachable: after the replay
  // times out the source is reset and rebuilt from the live stream.
  replay3.partition();
  const lost = e3.workload.step();
  await e3.publish(lost.events, { rank: lost.rank, dropLive: true });
  model.reset('3/0');

  // w4: the connection is reset, then silently drops bytes, then is slow.
  pub4.reset();
  await pause(300);
  pub4.blackhole();
  await pause(500);
  pub4.restore();
  pub4.delay(50);

  // w5: rank 1 goes silent for a while, then resumes.
  load.silent.add('5/1');
  const w3 = 'worker="3",dp_rank="0"';
  await waitFor(async () => (await metrics('kv_dc_relay_ingest_resets_total', w3)) >= 1, 'the replay-less gap to reset worker 3', SLOW_MS, 100);
  replay3.restore();
  pub4.delay(0);
  load.silent.delete('5/1');
  await pause(500);
  await load.stop();

  const poolKey = await waitFor(() => client!.catalog()?.pools.length === 1, 'the catalog', SLOW_MS).then(() => client!.catalog()!.pools[0].poolKey);
  await waitFor(() => imageMismatch(client!.replica(poolKey), model.hashes()) === undefined, 'the replica to equal the model', SLOW_MS, 20).catch(async (err: Error) => {
    const counters = (await relay!.metricsText()).split('\n').filter((l) => /overflow|resets|gaps|out_of_order|rejected|event_errors|parent_not_found/.test(l) && !l.startsWith('#') && !l.endsWith(' 0'));
    const bySource = ['1/0', '2/0', '3/0', '4/0', '5/0', '5/1'].map((src) => `${src}: ${imageMismatch(client!.replica(poolKey), model.sourceHashes(src))}`);
    throw new Error(`${err.message}: ${imageMismatch(client!.replica(poolKey), model.hashes())} (model rejected ${model.rejected})\n${bySource.join('\n')}\n${counters.join('\n')}`);
  });
  expect(model.hashes().length).toBeGreaterThan(50);

  const text = await relay.metricsText();
  const count = (name: string, worker: number, rank = 0): number => metricSum(text, `kv_dc_relay_ingest_${name}_total`, `worker="${worker}",dp_rank="${rank}"`);
  expect(count('resets', 1)).toBeGreaterThanOrEqual(1); // connection lost, then replay from 0
  expect(count('resets', 2)).toBeGreaterThanOrEqual(1); // sequence went back to 0
  expect(count('gaps', 3)).toBeGreaterThanOrEqual(1);
  expect(count('resets', 3)).toBeGreaterThanOrEqual(1);
  expect(count('resets', 4)).toBeGreaterThanOrEqual(1);
  expect(count('replays', 4)).toBeGreaterThanOrEqual(2);
  expect(count('resets', 5, 1)).toBe(0);
  expect(count('gaps', 5, 1)).toBe(0);
  expect(count('resets', 5, 0)).toBe(0);
  console.log(`engine faults: model ${model.hashes().length} blocks (${model.rejected} events with unknown parents); ` +
    ['resets', 'gaps', 'replays'].map((n) => `${n} ${[1, 2, 3, 4, 5].map((w) => count(n, w)).join('/')}`).join(', '));
}, 120_000);
