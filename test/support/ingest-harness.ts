import { KvEventSubscriber, type SubscriberOptions } from '../../src/ingest/subscriber';
import type { KvEventEndpointConfig } from '../../src/ingest/types';
import { SimulatedEngine, type SimulatedEngineOptions } from '../../src/sim/engine';
import { RecordingSink } from './recording-sink';

export const WORKER = 7n;
/** The pool block size the harness's subscriber decodes for. */
export const BLOCK_SIZE = 4;

export interface Harness {
  engine: SimulatedEngine;
  sub: KvEventSubscriber;
  sink: RecordingSink;
  warnings: { obj: object; msg: string }[];
  close(): Promise<void>;
}

/** A simulated engine (bind mode) and a subscriber dialing it, with every subscription in place. */
export async function connectHarness(
  engineOptions: SimulatedEngineOptions = {},
  config: Partial<KvEventEndpointConfig> = {},
  options: SubscriberOptions = {},
): Promise<Harness> {
  return attachSubscriber(await new SimulatedEngine({ http: false, ...engineOptions }).start(), config, options);
}

/** A subscriber dialing a running simulated engine. */
export async function attachSubscriber(
  engine: SimulatedEngine,
  config: Partial<KvEventEndpointConfig> = {},
  options: SubscriberOptions = {},
): Promise<Harness> {
  const sink = new RecordingSink();
  const warnings: Harness['warnings'] = [];
  const sub = new KvEventSubscriber(
    {
      workerId: WORKER,
      dpSize: engine.dpSize,
      dpStartRank: engine.dpStartRank,
      endpoint: engine.pubEndpoint,
      replayEndpoint: engine.replayEndpoint,
      topic: engine.topic,
      mode: 'connect',
      kvBlockSize: BLOCK_SIZE,
      eagle: false,
      ...config,
    },
    sink,
    { logger: { warn: (obj, msg) => warnings.push({ obj, msg }) }, replayIdleTimeoutMs: 2_000, ...options },
  );
  await sub.start();
  await engine.waitForSubscribers();
  const harness: Harness = {
    engine,
    sub,
    sink,
    warnings,
    // Stops whichever engine the test left in `engine` (a test may replace it).
    close: async () => {
      await sub.close();
      await harness.engine.stop();
    },
  };
  return harness;
}
