// The diagnostics sampler costs per change: over a real relay (one engine that publishes, eight
// workers whose endpoints nobody serves), a sample keeps the very snapshot object of every source
// that did not change and builds a new one, with the counters ingest reports now, for each that did
// (its messages; a config change rebuilds the sources of the pools it changed). A round where no
// source changed hands back the last round's list itself, and every round equals a sample built
// from scratch (a fresh sampler): what the rules and the status view read is unchanged.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Writable } from 'stream';
import { RecentLatency } from '../../src/diagnostics/recent-latency';
import { RelaySampler } from '../../src/diagnostics/sample';
import type { RelaySnapshot, SourceSnapshot } from '../../src/diagnostics/snapshot';
import type { SourceStats } from '../../src/ingest/types';
import { createLogger } from '../../src/log';
import { startRelay, type RunningRelay } from '../../src/server';
import { SimulatedEngine } from '../../src/sim';
import { freePort } from '../support/etcd-server';
import { BS, endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { waitFor } from '../support/waitFor';

const IDLE_WORKERS = 8;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-sampler-'));
const file = path.join(dir, 'relay.json');
let engine: SimulatedEngine;
let relay: RunningRelay;
let sampler: RelaySampler;
const latency = new RecentLatency(16, 1_000);

let idleEndpoints: string[] = [];

function config(): string {
  const idle = idleEndpoints.map((endpoint, i) => ({ id: 10 + i, kvEvents: { endpoint } }));
  return JSON.stringify(relayConfig([endpointConfig([workerConfig(1, engine), ...idle])]));
}

const sample = (): RelaySnapshot => sampler.sample(latency, 0);
const engineSource = (s: RelaySnapshot): SourceSnapshot => s.sources.find((x) => x.worker === '1')!;
const idleSources = (s: RelaySnapshot): SourceSnapshot[] => s.sources.filter((x) => x.worker !== '1');
const engineStats = (): SourceStats | undefined => relay.producer.ingestWorkerStats(1n)[0];
const ingested = (): number => engineStats()?.events ?? 0;
/** A sample by a sampler that never saw one: every source built from what ingest reports now. */
const fresh = (): RelaySnapshot => new RelaySampler({ producer: relay.producer, poolSubscribers: () => relay.server.poolSubscribers() }).sample(latency, 0);

beforeAll(async () => {
  engine = await new SimulatedEngine({ workload: { blockSize: BS } }).start();
  for (let i = 0; i < IDLE_WORKERS; i++) idleEndpoints.push(`tcp://127.0.0.1:${await freePort()}`);
  fs.writeFileSync(file, config());
  const quiet = new Writable({ write: (_chunk, _enc, done) => done() });
  relay = await startRelay({ configFile: file, logger: createLogger({ destination: quiet, level: 'info' }) });
  await engine.waitForSubscribers();
  await waitFor(() => engineStats()?.connections === 1, 'the engine connected');
  sampler = new RelaySampler({ producer: relay.producer, poolSubscribers: () => relay.server.poolSubscribers() });
}, 30_000);

afterAll(async () => {
  await relay?.shutdown();
  await engine?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('an unchanged source keeps its snapshot object: a sample of idle sources builds nothing', () => {
  const first = sample();
  expect(first.sources).toHaveLength(1 + IDLE_WORKERS);
  const built = sampler.built;
  const second = sample();
  idleSources(second).forEach((s, i) => expect(s).toBe(idleSources(first)[i]));
  // The engine's source may have just finished its replay (a counter changed): then it alone is built.
  expect(sampler.built - built).toBe(engineSource(second) === engineSource(first) ? 0 : 1);
  // Nothing changes while the engine does not publish: the very list of the last round, nothing built.
  const third = sample();
  expect(third.sources).toBe(second.sources);
  expect(sampler.built - built).toBe(engineSource(second) === engineSource(first) ? 0 : 1);
  expect(third).toEqual(fresh());
});

test("a source whose engine published is rebuilt with ingest's counters now; the idle ones are not", async () => {
  const before = sample();
  const built = sampler.built;
  const events = ingested();
  await engine.step(3);
  await waitFor(() => ingested() > events, 'the engine messages ingested');
  // Nothing in flight any more: what ingest reports stays put while the sample is compared with it.
  await waitFor(() => engineStats()!.lastSequence === engine.nextSequence() - 1n, 'every message ingested');
  const after = sample();
  const now = engineStats()!;
  expect(engineSource(after)).not.toBe(engineSource(before));
  expect(engineSource(after).stats).toEqual(now);
  expect(engineSource(after).stats.events).toBeGreaterThan(engineSource(before).stats.events);
  expect(sampler.built).toBe(built + 1);
  idleSources(after).forEach((s, i) => expect(s).toBe(idleSources(before)[i]));
  expect(after.sources).not.toBe(before.sources);
  expect(after).toEqual(fresh());
});

test("a config change shows in the next sample: a changed pool's sources are rebuilt with the new endpoint", async () => {
  const before = sample();
  const moved = `tcp://127.0.0.1:${await freePort()}`;
  idleEndpoints = [moved, ...idleEndpoints.slice(1)];
  fs.writeFileSync(file, config());
  await waitFor(() => sample().sources.some((s) => s.endpoint === moved), 'the new endpoint sampled', 10_000);
  const after = sample();
  expect(after.sources.find((s) => s.worker === '10')!.endpoint).toBe(moved);
  expect(before.sources.some((s) => s.endpoint === moved)).toBe(false);
  expect(after.sources).toHaveLength(1 + IDLE_WORKERS);
  // The engine's own source is as before, counters and all.
  expect(engineSource(after)).toEqual(engineSource(before));
  expect(after).toEqual(fresh());
});
