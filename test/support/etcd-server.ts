// A real etcd server for tests and benches: the `etcd` binary (Debian etcd-server; .ci/run installs
// it) on free loopback ports with a temporary data dir.
import { spawnSync, spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { waitFor } from './waitFor';

export const ETCD_BINARY = process.env.ETCD_BINARY ?? 'etcd';

export const etcdAvailable: boolean = spawnSync(ETCD_BINARY, ['--version'], { stdio: 'ignore' }).status === 0;

/** A loopback port free now (the OS's choice). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** etcd fsyncs its WAL on every commit; in memory (tmpfs) a test's puts do not wait for the VM's disk. */
export const DATA_ROOT = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();

/** A server process of a test, with a temporary data dir that outlives kill() (a crash) until stop(). */
export class ServerProcess {
  readonly dir: string;
  protected child: ChildProcess | undefined;

  constructor(name: string) {
    this.dir = fs.mkdtempSync(path.join(DATA_ROOT, `kvrelay-${name}-`));
  }

  /** Stops the server (SIGKILL: a crash); the data dir stays, so start() brings the same state back. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    await this.kill();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * `startOnce()`, again on other ports when the ones chosen for this start (`fresh`) were taken by
   * another test between freePort() and the server's bind; ports a client already points at are kept.
   */
  protected async startOnFreePorts<T>(fresh: boolean, pickPorts: () => Promise<void>, startOnce: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startOnce();
      } catch (err) {
        if (!fresh || attempt >= 3 || !/address already in use/.test((err as Error).message)) throw err;
        await this.kill();
        await pickPorts();
      }
    }
  }
}

export class EtcdServer extends ServerProcess {
  private log = '';
  clientPort = 0;

  constructor() {
    super('etcd');
  }
  private peerPort = 0;

  /** host:port of the client listener. */
  get endpoint(): string {
    return `127.0.0.1:${this.clientPort}`;
  }

  /** Picks the ports (start() does it too), so a client can be pointed at an etcd not yet started. */
  async reservePorts(): Promise<this> {
    if (this.clientPort === 0) {
      this.clientPort = await freePort();
      this.peerPort = await freePort();
    }
    return this;
  }

  async start(): Promise<this> {
    const fresh = this.clientPort === 0;
    await this.reservePorts();
    return this.startOnFreePorts(fresh, async () => {
      this.clientPort = 0;
      this.log = '';
      await this.reservePorts();
    }, () => this.startOnce());
  }

  private async startOnce(): Promise<this> {
    const client = `http://127.0.0.1:${this.clientPort}`;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const child = spawn(
      ETCD_BINARY,
      [
        '--name', 'test',
        '--data-dir', path.join(this.dir, 'data'),
        '--listen-client-urls', client,
        '--advertise-client-urls', client,
        '--listen-peer-urls', peer,
        '--initial-advertise-peer-urls', peer,
        '--initial-cluster', `test=${peer}`,
        '--log-level', 'warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.child = child;
    child.stderr!.on('data', (b: Buffer) => (this.log = (this.log + b.toString()).slice(-20_000)));
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`etcd exited ${child.exitCode}: ${this.log}`);
      try {
        const res = await fetch(`${client}/health`);
        return res.ok && ((await res.json()) as { health?: string }).health === 'true';
      } catch {
        return false;
      }
    }, 'etcd to serve', 20_000, 50);
    return this;
  }

}
