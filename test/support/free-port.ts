// A loopback TCP port nothing listens on right now (bound by the OS, then released): for a child
// process that takes its port on its command line, or for an address where nothing answers.
import * as net from 'net';

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
