// RelayChannel over real loopback gRPC and a real TCP port: after an established connection breaks,
// the channel that dials the relay again is a quick one for the recovery window (grpc-js keeps
// dialling it on its own, at most recoveryMaxMs apart), then a patient one while the relay stays away;
// a connection that broke right after it was made keeps the patient channel.
import * as net from 'net';
import { connectivityState as ConnectivityState, Metadata } from '@grpc/grpc-js';
import type { BackoffOptions } from '../../src/client/backoff';
import { RelayChannel } from '../../src/client/relay-channel';
import type { RelayServer } from '../../src/transport/server';
import { RELAY_CONTRACT_MARKER } from '../../src/wire/constants';
import { makeClient, type KvEventRelayClient } from '../../src/wire/service';
import { TestSource } from '../support/test-source';
import { waitFor } from '../support/waitFor';
import { startRelay } from './helpers';

const BACKOFF: BackoffOptions = { initialMs: 20, maxMs: 300, recoveryMaxMs: 40, recoveryWindowMs: 1_500 };

let server: RelayServer | undefined;
let channel: RelayChannel | undefined;
let refuser: net.Server | undefined;
afterEach(async () => {
  channel?.close();
  await server?.shutdown();
  await new Promise((resolve) => (refuser ? refuser.close(resolve) : resolve(undefined)));
  server = channel = refuser = undefined;
});

function open(address: string): { channel: RelayChannel; caps: number[] } {
  const caps: number[] = [];
  const c = new RelayChannel((maxReconnectMs) => {
    caps.push(maxReconnectMs);
    return makeClient(address, { channelOptions: { 'grpc.initial_reconnect_backoff_ms': BACKOFF.initialMs, 'grpc.max_reconnect_backoff_ms': maxReconnectMs } });
  }, BACKOFF);
  return { channel: c, caps };
}

/** One call on the channel in use; a channel dials only once something asks for it. */
function call(client: KvEventRelayClient): Promise<boolean> {
  return new Promise((resolve) => client.getRelayInfo({ contractMarker: RELAY_CONTRACT_MARKER }, new Metadata(), { deadline: Date.now() + 2_000 }, (err) => resolve(!err)));
}

/** Accepts and closes every connection on `port`, counting them: a relay port that refuses to serve. */
async function refuse(port: number): Promise<number[]> {
  const dials: number[] = [];
  refuser = net.createServer((socket) => {
    dials.push(Date.now());
    socket.destroy();
  });
  await new Promise<void>((resolve) => refuser!.listen(port, '127.0.0.1', resolve));
  return dials;
}

test('an established connection that breaks: quick channel for the recovery window, then the patient one', async () => {
  server = await startRelay(new TestSource());
  const port = server.port;
  const opened = open(server.address);
  channel = opened.channel;
  expect(await call(channel.client)).toBe(true);
  const connectedAt = Date.now();
  // "Established" is defined by time: the connection must have lasted the backoff cap.
  await waitFor(() => Date.now() - connectedAt > BACKOFF.maxMs, 'the connection to last the backoff cap');
  expect(channel.client.getChannel().getConnectivityState(false)).toBe(ConnectivityState.READY);

  await server.shutdown();
  server = undefined;
  const dials = await refuse(port);
  await waitFor(() => channel!.recovering, 'the quick channel');
  expect(opened.caps).toEqual([BACKOFF.maxMs, BACKOFF.recoveryMaxMs]);
  const quickAt = Date.now();
  expect(await call(channel.client)).toBe(false);
  await waitFor(() => !channel!.recovering, 'the patient channel once the window passed', 5_000);
  const windowDials = dials.filter((t) => t >= quickAt).length;
  // ~1.5 s at most 40 ms (±20 % jitter) apart, with no call asking: the channel dials on its own.
  expect(windowDials).toBeGreaterThanOrEqual(10);
  expect(opened.caps).toEqual([BACKOFF.maxMs, BACKOFF.recoveryMaxMs, BACKOFF.maxMs]);
});

test('a connection that breaks before it lasted the backoff cap keeps the patient channel', async () => {
  server = await startRelay(new TestSource());
  const opened = open(server.address);
  channel = opened.channel;
  expect(await call(channel.client)).toBe(true);
  const client = channel.client;
  await server.shutdown();
  server = undefined;
  await waitFor(() => client.getChannel().getConnectivityState(false) !== ConnectivityState.READY, 'the connection to be lost');
  expect(await call(channel.client)).toBe(false);
  expect(channel.recovering).toBe(false);
  expect(channel.client).toBe(client);
  expect(opened.caps).toEqual([BACKOFF.maxMs]);
});
