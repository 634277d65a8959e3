// The process side of EngineProcess (engine-process.ts): a SimulatedEngine in a process of its own,
// publishing vLLM msgpack batches over ZMQ PUB with a replay ROUTER, reporting every batch it
// published to its parent over IPC. Run with `node -r scripts/ts-hook.js` by EngineProcess.fork.
import { SimulatedEngine, type SimulatedEngineOptions } from '../../src/sim';
import type { EngineCommand, EngineReport } from './engine-process';

const STEP_MS = 15;

function report(message: EngineReport): void {
  process.send!(message);
}

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2]) as SimulatedEngineOptions;
  const engine = await new SimulatedEngine({ ...options, http: false }).start();
  let running = false;
  let chain = Promise.resolve();
  // One step at a time (bursts and the timer alike), so the parent's reports come in publication order.
  const step = (burst = false): Promise<void> => {
    chain = chain.then(async () => {
      const { rank, events } = engine.workload.step();
      if (events.length === 0) return;
      await engine.publish(events, { rank });
      report({ kind: 'batch', rank, events, burst });
    });
    return chain;
  };
  const tick = (): void => {
    if (!running) return;
    void step().then(() => setTimeout(tick, STEP_MS));
  };
  process.on('message', (command: EngineCommand) => {
    if (command.kind === 'run') {
      running = true;
      tick();
    } else if (command.kind === 'stop') {
      running = false;
      void chain.then(() => report({ kind: 'stopped' }));
    } else if (command.kind === 'burst') {
      void (async () => {
        await step(true);
        report({ kind: 'bursting' });
        for (let i = 1; i < command.batches; i++) await step(true);
      })();
    }
  });
  report({ kind: 'ready', pubEndpoint: engine.pubEndpoint, replayEndpoint: engine.replayEndpoint, dpSize: engine.dpSize, dpStartRank: engine.dpStartRank });
  await engine.waitForSubscribers();
  report({ kind: 'subscribed' });
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
