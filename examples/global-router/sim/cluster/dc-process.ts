// A DC's engines as a process of their own: the calibrated engine model (all the DC's ranks behind
// its local router) and a SimulatedEngine that publishes the model's KV events in vLLM's wire format
// (ZMQ PUB per rank, replay ROUTER) and serves /health and /metrics, which the DC's relay consumes.
// The driver moves simulated time forward over IPC; each step's events are published as the model
// produces them, so the relay sees the caches the routing decisions produce.
import { SimulatedEngine } from '../../../../src/sim/engine';
import type { SimEvent } from '../../../../src/sim/encode';
import { DcEngine, type EngineOutput } from '../engine/dc-engine';
import { engineRequest } from '../request';
import type { DcProcessConfig, FromDc, Lifecycle, ToDc } from './dc-protocol';

/** Batches the engine's replay buffer keeps per rank (vLLM's buffer_steps): enough for a relay restarted mid-run. */
const REPLAY_BUFFER_STEPS = 1_000_000;

function send(message: FromDc): void {
  process.send!(message);
}

function kvEvents(o: Extract<EngineOutput, { kind: 'kv' }>, blockSize: number): SimEvent[] {
  const events: SimEvent[] = [];
  if (o.removed.length > 0) events.push({ type: 'BlockRemoved', blockHashes: o.removed.map(BigInt) });
  for (const run of o.stored) {
    events.push({ type: 'BlockStored', blockHashes: run.hashes.map(BigInt), parentBlockHash: run.parent === null ? null : BigInt(run.parent), tokenIds: run.tokens, blockSize, loraName: null });
  }
  return events;
}

async function start(config: DcProcessConfig): Promise<void> {
  const model = new DcEngine(config.ranks, config.rank);
  const engine = new SimulatedEngine({
    dpSize: config.ranks,
    modelName: config.model,
    bufferSteps: REPLAY_BUFFER_STEPS,
    // Requests come from the driver; the engine's own generator never runs, so it needs no room.
    workload: { blockSize: config.rank.blockSize, capacityBlocks: 2, maxConversationBlocks: 1, systemPromptBlocks: 1 },
  });
  await engine.start();
  const gauges = () => Array.from({ length: config.ranks }, (_, r) => model.gauges(r));
  const publishGauges = () => gauges().forEach((g, r) => engine.setGauges(r, g));
  publishGauges();
  send({ type: 'ready', pubEndpoint: engine.pubEndpoint, replayEndpoint: engine.replayEndpoint!, httpUrl: engine.httpUrl! });
  void engine.waitForSubscribers().then(() => send({ type: 'subscribed' }));

  process.on('message', (message: ToDc) => {
    try {
      handle(message);
    } catch (err) {
      send({ type: 'error', message: (err as Error).stack ?? String(err) });
    }
  });

  function handle(message: ToDc): void {
    switch (message.type) {
      case 'arrive':
        model.arrive(engineRequest(message.request), message.atMs);
        return;
      case 'advance': {
        const lifecycle: Lifecycle[] = [];
        for (const o of model.advance(message.toMs)) {
          if (o.kind !== 'kv') {
            lifecycle.push(o);
            continue;
          }
          // Sends are chained per rank inside the engine, so batches go out in step order.
          void engine.publish(kvEvents(o, config.rank.blockSize), { rank: o.rank, ts: o.atMs / 1000 });
        }
        publishGauges();
        send({ type: 'advanced', seq: message.seq, outputs: lifecycle, gauges: gauges() });
        return;
      }
      case 'stop':
        void engine.stop().then(() => process.exit(0));
        return;
      case 'start':
        return;
    }
  }
}

if (require.main === module) {
  process.once('message', (message: ToDc) => {
    if (message.type !== 'start') return;
    start(message.config).catch((err: Error) => {
      send({ type: 'error', message: err.stack ?? err.message });
      process.exit(1);
    });
  });
  // The driver going away ends the DC (no orphans).
  process.on('disconnect', () => process.exit(0));
}
