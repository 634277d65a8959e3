// A real nats-server for tests and benches: the binary (Debian nats-server; .ci/run installs it) with
// JetStream on (-js) and a temporary store dir, on a free loopback port. kill() and start() again keep
// the store (streams survive a restart, as a NATS deployment's do).
import { spawnSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { freePort, ServerProcess } from './etcd-server';
import { waitFor } from './waitFor';

export const NATS_BINARY = process.env.NATS_SERVER_BINARY ?? (fs.existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server');

export const natsAvailable: boolean = spawnSync(NATS_BINARY, ['--version'], { stdio: 'ignore' }).status === 0;

export class NatsServer extends ServerProcess {
  private log = '';
  port = 0;

  /** `maxPendingBytes`: what the server buffers for a slow subscriber before it cuts it off (a bench raises it). */
  constructor(private readonly options: { maxPendingBytes?: number } = {}) {
    super('nats');
  }

  /** nats://host:port of the client listener. */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    // The same port again after a kill(), so clients reconnect to it.
    const fresh = this.port === 0;
    if (fresh) this.port = await freePort();
    return this.startOnFreePorts(fresh, async () => {
      this.port = await freePort();
      this.log = '';
    }, () => this.startOnce());
  }

  private async startOnce(): Promise<this> {
    const args = ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', path.join(this.dir, 'store')];
    if (this.options.maxPendingBytes !== undefined) {
      const conf = path.join(this.dir, 'nats.conf');
      fs.writeFileSync(conf, `max_pending: ${this.options.maxPendingBytes}\n`);
      args.push('-c', conf);
    }
    const child = spawn(NATS_BINARY, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child = child;
    child.stderr!.on('data', (b: Buffer) => (this.log = (this.log + b.toString()).slice(-20_000)));
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`nats-server exited ${child.exitCode}: ${this.log}`);
        return this.log.includes('Server is ready');
      },
      'nats-server to serve',
      20_000,
      20,
    );
    return this;
  }
}
