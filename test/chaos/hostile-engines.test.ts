// Hostile engine peers against a relay process (issue 26 items 1, 2 and 4), kept in CI:
//   - a bind-mode socket is open to anyone only when the config says so, and a publisher outside
//     allowedPeers is cut off before any of its frames is taken (libzmq holds an unfinished multipart
//     message whole, so a message bound cannot exist on that path: a raw ZMTP sender, which, unlike
//     a libzmq one, sends parts of a message that never ends, shows it);
//   - messages of the largest allowed size, and the outsized events the decoder now refuses, leave
//     no memory behind once handled and never hold the event loop long.
import { Packr } from 'msgpackr';
import { SimulatedEngine } from '../../src/sim';
import { INGEST_MAX_BLOCKS_PER_EVENT, INGEST_MAX_MESSAGE_BYTES, INGEST_MAX_MESSAGE_WORDS } from '../../src/config/defaults';
import { runAlone } from '../support/exclusive';
import { freePort } from '../support/etcd-server';
import { endpointConfig, relayConfig, workerConfig } from '../support/relay-config';
import { metricSum, RelayProcess } from '../support/relay-process';
import { waitFor, waitForValue } from '../support/waitFor';
import { ZmtpPeer } from '../support/zmtp-peer';

runAlone();

const MIB = 1024 * 1024;
const DEADLINE_MS = 60_000;
/** A relay process per test on a loaded machine, and hundreds of MiB through loopback. */
const TEST_MS = 180_000;
jest.setTimeout(TEST_MS);

let relay: RelayProcess | undefined;
const engines: SimulatedEngine[] = [];
const peers: ZmtpPeer[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) p.close();
  await relay?.close();
  relay = undefined;
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

function bindWorker(id: number, port: number, kvEvents: Record<string, unknown>): Record<string, unknown> {
  return { id, totalKvBlocks: 100, live: true, kvEvents: { endpoint: `tcp://127.0.0.1:${port}`, mode: 'bind', ...kvEvents } };
}

test('a relay whose bind-mode worker has no allowedPeers refuses to start unless allowAnyPeer says so', async () => {
  const port = await freePort();
  relay = new RelayProcess(relayConfig([endpointConfig([bindWorker(1, port, {})])]));
  await expect(relay.start()).rejects.toThrow(/mode bind needs allowedPeers/);
  relay.write(relayConfig([endpointConfig([bindWorker(1, port, { allowAnyPeer: true })])]));
  await relay.start();
});

test('a publisher outside allowedPeers is cut off before its unfinished multipart message is taken; a listed one is ingested', async () => {
  const port = await freePort();
  relay = await new RelayProcess(relayConfig([endpointConfig([bindWorker(1, port, { allowedPeers: ['127.0.0.2'] })])])).start();
  const before = relay.rssBytes();
  // From 127.0.0.1: 256 MiB of 4 MiB frames that all carry MORE (an allowed peer so held 1 GiB).
  const hostile = await connectWhenBound(port);
  peers.push(hostile);
  const frame = Buffer.alloc(INGEST_MAX_MESSAGE_BYTES, 0x61);
  let sent = 0;
  while (!hostile.isClosed && sent < 256 * MIB) {
    await hostile.send(frame, true);
    sent += frame.length;
  }
  await hostile.closed;
  expect(sent).toBeLessThan(256 * MIB);
  expect(relay.rssBytes() - before).toBeLessThan(64 * MIB);
  await waitFor(async () => metricSum(await relay!.metricsText(), 'kv_dc_relay_ingest_refused_peers_total') >= 1, 'the refusal counted', DEADLINE_MS);
  expect(relay.events().find((e) => e.msg === 'KV-event publisher refused: not in allowedPeers')).toMatchObject({ peer: '127.0.0.1' });

  // The same raw sender from the listed address: a whole [topic, sequence, payload] message is ingested.
  const listed = await ZmtpPeer.connect(port, { localAddress: '127.0.0.2' });
  peers.push(listed);
  const sequence = Buffer.alloc(8);
  const payload = new Packr({ useRecords: false }).pack([Date.now() / 1000, [['BlockStored', [1], null, [1, 2, 3, 4], 4, null, 'GPU']], 0]);
  await waitFor(async () => {
    await listed.sendMessage([Buffer.alloc(0), sequence, payload]);
    return metricSum(await relay!.metricsText(), 'kv_dc_relay_ingest_events_total') >= 1;
  }, 'the listed publisher\'s event', DEADLINE_MS, 200);
});

/**
 * A raw peer connected to the relay's bind-mode endpoint once it is bound: the relay binds its
 * engine sockets only after it logged "listening" (start-relay: ingest starts last), and a raw
 * sender, unlike a libzmq one, does not reconnect after ECONNREFUSED.
 */
function connectWhenBound(port: number): Promise<ZmtpPeer> {
  const attempt = (): Promise<ZmtpPeer | undefined> =>
    ZmtpPeer.connect(port).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') return undefined;
      throw err;
    });
  return waitForValue(attempt, "the relay to bind the worker's endpoint", DEADLINE_MS, 20);
}

/** msgpack of a batch [ts, events, dp_rank]. */
function batch(events: unknown[]): Buffer {
  return new Packr({ useRecords: false }).pack([Date.now() / 1000, events, 0]);
}

/** `n` one-byte engine ids (msgpack positive fixints): the most ids a payload byte buys. */
function oneByteIds(n: number): number[] {
  return Array.from({ length: n }, (_, i) => 1 + (i % 127));
}

test('the largest messages, allowed or refused, leave no memory behind and never hold the event loop long', async () => {
  const engine = await new SimulatedEngine({ http: false, replay: false }).start();
  engines.push(engine);
  relay = await new RelayProcess(relayConfig([endpointConfig([workerConfig(1, engine, { replay: false })])])).start();
  await engine.waitForSubscribers();
  // The relay reports its loop delay since the previous scrape: the worst of every scrape counts.
  let loopMaxS = 0;
  const metrics = async (name: string): Promise<number> => {
    const text = await relay!.metricsText();
    loopMaxS = Math.max(loopMaxS, metricSum(text, 'kv_dc_relay_event_loop_delay_seconds', 'quantile="1"'));
    return metricSum(text, name);
  };
  // Warm: a normal store, applied.
  await engine.publish([{ type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: [1, 2, 3, 4], blockSize: 4 }]);
  await waitFor(async () => (await metrics('kv_dc_relay_ingest_events_total')) >= 1, 'the first event', DEADLINE_MS);
  const baseline = relay.rssBytes();
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, relay!.rssBytes())), 10);
  await relay.metricsText(); // the loop delay is reported since the last scrape
  loopMaxS = 0;
  try {
    // (a) A BlockStored of 4 M one-byte ids (the repeat check sized 224 MiB for it) and (b) 16
    // BlockRemoved of 4 M ids each: no engine event, refused (malformed) before scratch grows.
    // One at a time: what libzmq queues of 4 MiB messages is its own bound (32 per connection,
    // docs: Security), not what handling a message costs.
    const outsized = INGEST_MAX_MESSAGE_BYTES - 1024;
    const refused = async (payload: Buffer, n: number): Promise<void> => {
      await engine.publishPayload(payload);
      await waitFor(async () => (await metrics('kv_dc_relay_ingest_malformed_total')) === n, `outsized message ${n} refused`, DEADLINE_MS, 20);
    };
    await refused(batch([['BlockStored', oneByteIds(outsized / 2), null, [], 4, null, 'GPU']]), 1);
    const removal = batch([['BlockRemoved', oneByteIds(outsized), 'GPU']]);
    for (let i = 0; i < 16; i++) await refused(removal, 2 + i);
    // (c) 16 of the largest messages decoded: as many events of INGEST_MAX_BLOCKS_PER_EVENT ids as fit
    // INGEST_MAX_MESSAGE_WORDS (removals of ids never stored: nothing is tracked after them).
    const perMessage = Math.floor(INGEST_MAX_MESSAGE_WORDS / (INGEST_MAX_BLOCKS_PER_EVENT + 2));
    const largest = batch(Array.from({ length: perMessage }, () => ['BlockRemoved', oneByteIds(INGEST_MAX_BLOCKS_PER_EVENT), 'GPU']));
    for (let i = 0; i < 16; i++) await engine.publishPayload(largest);
    await waitFor(async () => (await metrics('kv_dc_relay_ingest_events_total')) === 1 + 16 * perMessage, 'the 16 largest messages delivered', DEADLINE_MS);
    await waitFor(async () => (await metrics('kv_dc_relay_pool_events_applied_total')) >= 1 + 16 * perMessage, 'their events applied', DEADLINE_MS);
  } finally {
    clearInterval(sampler);
  }
  await metrics('kv_dc_relay_ingest_events_total');
  expect(loopMaxS).toBeGreaterThan(0); // the relay's sampler ran
  // Nothing is tracked after them: peak below twice the baseline, and back within 64 MiB of it.
  expect(peak).toBeLessThan(2 * baseline);
  await waitFor(() => relay!.rssBytes() - baseline < 64 * MIB, `RSS back within 64 MiB of ${Math.round(baseline / MIB)} MiB`, DEADLINE_MS, 500);
  // Before: 100-230 ms per 4 MiB message (two loop copies of up to 32 MiB). The 5 ms goal is
  // measured in bench/ingest-stall; here a bound a loaded CI machine keeps.
  expect(loopMaxS).toBeLessThan(0.05);
});
