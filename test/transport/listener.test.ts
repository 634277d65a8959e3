// The listener: numeric bind addresses only, bind errors surface at start, Nagle is off.
import * as net from 'net';
import { listen, parseBind } from '../../src/transport/listener';
import { startRelayServer } from '../../src/transport/server';
import { TestSource } from '../support/test-source';
import { RELAY } from './helpers';

test.each([
  ['127.0.0.1:5561', '127.0.0.1', 5561],
  ['0.0.0.0:0', '0.0.0.0', 0],
  ['[::1]:5561', '::1', 5561],
  ['[::]:80', '::', 80],
])('parseBind(%s)', (bind, host, port) => {
  expect(parseBind(bind)).toEqual({ host, port });
});

test.each(['localhost:5561', '127.0.0.1', '127.0.0.1:', '127.0.0.1:65536', '::1:5561', '', '[::1]'])('parseBind rejects %j', (bind) => {
  expect(() => parseBind(bind)).toThrow(RangeError);
});

test('a bind error fails the start (port already in use) and leaves nothing running', async () => {
  const taken = await listen('127.0.0.1:0', (s) => s.destroy());
  await expect(startRelayServer({ source: new TestSource(), bind: taken.address, relay: RELAY })).rejects.toThrow(/EADDRINUSE/);
  await taken.close(0);
});

test('close destroys connections that are still open after the grace', async () => {
  const accepted: net.Socket[] = [];
  const l = await listen('127.0.0.1:0', (s) => accepted.push(s));
  const client = net.connect(l.port, '127.0.0.1');
  client.resume();
  const closed = new Promise((r) => client.once('close', r));
  await new Promise((r) => client.once('connect', r));
  const started = Date.now();
  await l.close(50);
  await closed;
  expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  expect(accepted[0].destroyed).toBe(true);
});
