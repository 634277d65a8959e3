// Engine faults under load, one per worker of one pool, all at once, against a relay process:
//   w1  an engine process killed with SIGKILL mid-burst, a new process on the same ports with a new sequence;
//   w2  the engine restarts behind the same sockets (sequence back to 0);
//   w3  the replay endpoint is down when a batch is lost on the wire;
//   w4  the PUB connection is reset, blackholed, then delayed (a TCP proxy in between): after the
//       blackhole no reset and no replay beyond what a gap needs, while delayed no reset and no gap;
//   w5  rank 1 of 2 goes silent while rank 0 keeps publishing, then comes back.
// Each ends in the specified reset/replay (per-source ingest counters), and at rest the consumer's
// replica holds exactly what a model fed the same events holds.
import { RelayClient } from '../../src/client';
import { SimulatedEngine, type SimulatedEngineOptions } from '../../src/sim';
import { EngineLoad } from '../support/engine-load';
import { EngineProcess } from '../support/engine-process';
import { PoolModel, imageMismatch } from '../support/pool-model';
import { BS, endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { metricSum, RelayProcess } from '../support/relay-process';
import { TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/waitFor';
import { runAlone } from '../support/exclusive';

const SLOW_MS = 40_000;
/** Batches of the burst worker 1's engine is killed in (it reports the first, then dies well before the last). */
const W1_BURST = 400;
const BLACKHOLE_MS = 500;
const W4_DELAY_MS = 50;
/** Engine events a phase of worker 4 must carry before its counters are read. */
const W4_FLOWING_EVENTS = 30;

let relay: RelayProcess | undefined;
let client: RelayClient | undefined;
let load: EngineLoad | undefined;
const engines: SimulatedEngine[] = [];
const processes: EngineProcess[] = [];
const proxies: TcpProxy[] = [];
runAlone();

afterEach(async () => {
  await load?.stop();
  client?.close();
  await relay?.close();
  await Promise.allSettled([...engines.splice(0).map((e) => e.stop()), ...processes.splice(0).map((p) => p.kill()), ...proxies.splice(0).map((p) => p.close())]);
});

function engine(seed: number, o: SimulatedEngineOptions = {}): Promise<SimulatedEngine> {
  const e = new SimulatedEngine({ modelName: 'llama', workload: { ...WORKLOAD, seed }, ...o });
  engines.push(e);
  return e.start();
}

const WORKLOAD = { blockSize: BS, capacityBlocks: 64, maxConversationBlocks: 24 };

/** An engine in a process of its own, whose every published batch `model` follows as worker `workerId`. */
function engineProcess(seed: number, model: PoolModel, workerId: number, o: SimulatedEngineOptions = {}): Promise<EngineProcess> {
  const p = new EngineProcess({ modelName: 'llama', workload: { ...WORKLOAD, seed }, ...o });
  processes.push(p);
  p.onBatch((rank, events) => model.apply(`${workerId}/${rank}`, events));
  return p.start();
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
  const e1 = await engineProcess(1, model, 1);
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
  await Promise.all([e1, ...engines].map((e) => e.waitForSubscribers()));
  e1.run();
  load = new EngineLoad();
  [e2, e3, e4, e5].forEach((e, i) => {
    model.follow(e, i + 2);
    load!.drive(i + 2, e);
  });
  await pause(500);
  const metrics = async (name: string, source: string): Promise<number> => metricSum(await relay!.metricsText(), name, source);

  // w1: SIGKILL while a burst is being sent; its successor, a new process, binds the same ports and
  // starts at sequence 0. Whatever the dead one published goes with its connection.
  await e1.burst(W1_BURST);
  await e1.kill('SIGKILL');
  expect(e1.killedBy('SIGKILL')).toBe(true);
  expect(e1.burstBatches).toBeGreaterThan(0);
  expect(e1.burstBatches).toBeLessThan(W1_BURST);
  model.reset('1/0');
  const e1b = await engineProcess(11, model, 1, { port: port(e1.pubEndpoint), replayPort: port(e1.replayEndpoint) });
  await e1b.waitForSubscribers();
  e1b.run();

  // w2: restarts behind the same sockets.
  e2.restart();
  model.reset('2/0');

  // w3: a batch is lost on the wire while the replay endpoint is unreachable: after the replay
  // times out the source is reset and rebuilt from the live stream.
  replay3.partition();
  const lost = e3.workload.step();
  await e3.publish(lost.events, { rank: lost.rank, dropLive: true });
  model.reset('3/0');

  // w4: the connection is reset, then blackholed (nothing passes, the connection stays up), then
  // slow. Each phase is read from worker 4's counters once messages flow through it again.
  const w4 = async (): Promise<Record<'resets' | 'gaps' | 'replays' | 'events' | 'connections', number>> => {
    const text = await relay!.metricsText();
    const of = (name: string): number => metricSum(text, `kv_dc_relay_ingest_${name}`, 'worker="4",dp_rank="0"');
    return { resets: of('resets_total'), gaps: of('gaps_total'), replays: of('replays_total'), events: of('events_total'), connections: of('connections') };
  };
  /** Worker 4's counters once W4_FLOWING_EVENTS more engine events than in `since` reached the relay. */
  const w4After = async (since: { events: number }, what: string) => {
    await waitFor(async () => (await w4()).events >= since.events + W4_FLOWING_EVENTS, what, SLOW_MS, 50);
    return w4();
  };
  const beforeReset = await w4();
  pub4.reset();
  await waitFor(async () => (await w4()).resets > beforeReset.resets, 'the reset connection to reset worker 4', SLOW_MS, 50);
  const afterReset = await w4After(await w4(), 'worker 4 to reconnect after the reset');
  expect(afterReset.connections).toBe(1);
  expect(afterReset.replays).toBeGreaterThan(beforeReset.replays); // a reset source asks for everything again
  pub4.blackhole();
  await pause(BLACKHOLE_MS);
  const held = await w4();
  pub4.restore();
  const afterBlackhole = await w4After(held, 'worker 4 to flow again after the blackhole');
  // The held bytes arrive in order: the connection was never lost, so no reset; a message lost on the
  // wire (none when the engine's queue held everything) is a gap, and only a gap asks for a replay.
  expect(afterBlackhole.resets).toBe(afterReset.resets);
  expect(afterBlackhole.replays - afterReset.replays).toBeLessThanOrEqual(afterBlackhole.gaps - afterReset.gaps);
  pub4.delay(W4_DELAY_MS);
  const delayed = await w4After(await w4(), 'worker 4 to flow through the delay');
  // Latency only.
  expect({ resets: delayed.resets, gaps: delayed.gaps, replays: delayed.replays }).toEqual({ resets: afterBlackhole.resets, gaps: afterBlackhole.gaps, replays: afterBlackhole.replays });

  // w5: rank 1 goes silent for a while, then resumes.
  load.silent.add('5/1');
  const w3 = 'worker="3",dp_rank="0"';
  await waitFor(async () => (await metrics('kv_dc_relay_ingest_resets_total', w3)) >= 1, 'the replay-less gap to reset worker 3', SLOW_MS, 100);
  replay3.restore();
  pub4.delay(0);
  load.silent.delete('5/1');
  await pause(500);
  await Promise.all([load.stop(), e1b.stopWorkload()]);

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
  expect(count('replays', 1)).toBeGreaterThanOrEqual(2); // the first connect's and the successor's
  expect(count('resets', 2)).toBeGreaterThanOrEqual(1); // sequence went back to 0
  expect(count('gaps', 3)).toBeGreaterThanOrEqual(1);
  expect(count('resets', 3)).toBeGreaterThanOrEqual(1);
  expect(count('resets', 4)).toBeGreaterThanOrEqual(1);
  expect(count('replays', 4)).toBeGreaterThanOrEqual(2);
  expect(count('resets', 5, 1)).toBe(0);
  expect(count('gaps', 5, 1)).toBe(0);
  expect(count('resets', 5, 0)).toBe(0);
  console.log(`engine faults: worker 1 killed after ${e1.burstBatches} of ${W1_BURST} burst batches; model ${model.hashes().length} blocks (${model.rejected} events with unknown parents); ` +
    ['resets', 'gaps', 'replays'].map((n) => `${n} ${[1, 2, 3, 4, 5].map((w) => count(n, w)).join('/')}`).join(', '));
}, 120_000);
