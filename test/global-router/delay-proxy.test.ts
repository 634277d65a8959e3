// The WAN delay proxy over real loopback sockets: added latency each way, bytes intact and in
// order (also through its backpressure path), and failures passed on as resets.
import { randomBytes } from 'crypto';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'net';
import { performance } from 'perf_hooks';
import { DelayProxy } from '../../examples/global-router/sim/cluster/delay-proxy';

async function echoServer(): Promise<{ server: Server; address: string }> {
  const server = createServer((s) => s.pipe(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, address: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function connect(address: string): Promise<Socket> {
  const [host, port] = address.split(':');
  return new Promise((resolve, reject) => {
    const s = createConnection({ host, port: Number(port) }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Sends `data` and resolves with the first `data.length` bytes echoed back. */
function roundTrip(socket: Socket, data: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let got = 0;
    const onData = (c: Buffer) => {
      chunks.push(c);
      got += c.length;
      if (got >= data.length) {
        socket.off('data', onData);
        resolve(Buffer.concat(chunks));
      }
    };
    socket.on('data', onData);
    socket.write(data);
  });
}

describe('DelayProxy', () => {
  let echo: { server: Server; address: string };
  let proxy: DelayProxy | undefined;
  const sockets: Socket[] = [];

  beforeEach(async () => {
    echo = await echoServer();
  });

  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await proxy?.close();
    proxy = undefined;
    await new Promise<void>((resolve) => echo.server.close(() => resolve()));
  });

  it('adds its delay in each direction', async () => {
    proxy = await DelayProxy.start({ target: echo.address, delayMs: 40 });
    const s = await connect(proxy.address);
    sockets.push(s);
    const started = performance.now();
    expect((await roundTrip(s, Buffer.from('ping'))).toString()).toBe('ping');
    expect(performance.now() - started).toBeGreaterThanOrEqual(79);
    proxy.setDelay(0);
    expect(proxy.delayMs).toBe(0);
  });

  it('keeps bytes intact and in order, also when a direction fills its queue', async () => {
    proxy = await DelayProxy.start({ target: echo.address, delayMs: 5, maxQueuedBytes: 64 * 1024 });
    const s = await connect(proxy.address);
    sockets.push(s);
    const data = randomBytes(2 * 1024 * 1024);
    expect((await roundTrip(s, data)).equals(data)).toBe(true);
  });

  it('resets the client when the target refuses, and every connection on close', async () => {
    const closed = await echoServer();
    const deadAddress = closed.address;
    await new Promise<void>((resolve) => closed.server.close(() => resolve()));
    const dead = await DelayProxy.start({ target: deadAddress, delayMs: 1 });
    const refused = await connect(dead.address);
    await new Promise((resolve) => refused.once('close', resolve));
    await dead.close();

    proxy = await DelayProxy.start({ target: echo.address, delayMs: 1 });
    const s = await connect(proxy.address);
    sockets.push(s);
    await roundTrip(s, Buffer.from('x'));
    expect(proxy.connections).toBe(1);
    const gone = new Promise((resolve) => s.once('close', resolve));
    s.on('error', () => undefined);
    await proxy.close();
    proxy = undefined;
    await gone;
  });

  it('holds every byte while partitioned and delivers them when the partition heals', async () => {
    proxy = await DelayProxy.start({ target: echo.address, delayMs: 1 });
    const s = await connect(proxy.address);
    sockets.push(s);
    await roundTrip(s, Buffer.from('warm'));
    proxy.setPartitioned(true);
    expect(proxy.partitioned).toBe(true);
    let echoed = '';
    s.on('data', (b: Buffer) => (echoed += b.toString()));
    s.write('held');
    // The echo server is reachable only through the proxy: while partitioned nothing can come back.
    await roundTrip(await connect(echo.address).then((direct) => (sockets.push(direct), direct)), Buffer.from('other path works'));
    expect(echoed).toBe('');
    const back = new Promise<void>((resolve) => s.on('data', () => echoed === 'held' && resolve()));
    proxy.setPartitioned(false);
    await back;
    expect(echoed).toBe('held');
  });

  it('sends new connections to a new target, resetting the old ones', async () => {
    proxy = await DelayProxy.start({ target: echo.address, delayMs: 1 });
    const old = await connect(proxy.address);
    sockets.push(old);
    await roundTrip(old, Buffer.from('x'));
    const other = await echoServer();
    try {
      const reset = new Promise((resolve) => old.once('close', resolve));
      old.on('error', () => undefined);
      proxy.retarget(other.address);
      await reset;
      let accepted = 0;
      other.server.on('connection', () => accepted++);
      const s = await connect(proxy.address);
      sockets.push(s);
      expect((await roundTrip(s, Buffer.from('moved'))).toString()).toBe('moved');
      expect(accepted).toBe(1);
    } finally {
      for (const x of sockets.splice(0)) x.destroy();
      await new Promise<void>((resolve) => other.server.close(() => resolve()));
    }
  });

  it('rejects a bad delay or target', async () => {
    await expect(DelayProxy.start({ target: echo.address, delayMs: -1 })).rejects.toThrow(RangeError);
    await expect(DelayProxy.start({ target: 'nowhere', delayMs: 1 })).rejects.toThrow(TypeError);
    proxy = await DelayProxy.start({ target: echo.address, delayMs: 1 });
    expect(() => proxy!.setDelay(Number.NaN)).toThrow(RangeError);
  });
});
