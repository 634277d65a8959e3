// A `kv-dc-relay serve` process for chaos tests: started from a config file, killed with any signal,
// restarted on the same gRPC port, observed through its /metrics and /proc (RSS).
import type { ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { loggedAddress, spawnCli } from './cli-process';
import { waitFor } from './waitFor';

const START_TIMEOUT_MS = 30_000;

export class RelayProcess {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-chaos-'));
  readonly file = path.join(this.dir, 'relay.json');
  private child: ChildProcess | undefined;
  private stderrText = '';
  /** gRPC address of the current incarnation (kept across restarts: the port is reused). */
  address = '';
  metricsAddress = '';
  /** Date.now() when the current incarnation logged "listening". */
  listeningAt = 0;

  constructor(config: Record<string, unknown>) {
    this.write(config);
  }

  /** Replaces the config file atomically (the relay's watch sees a rename). */
  write(config: Record<string, unknown>): void {
    const tmp = path.join(this.dir, '.relay.json.tmp');
    fs.writeFileSync(tmp, JSON.stringify(config));
    fs.renameSync(tmp, this.file);
  }

  /** Writes raw text as the config (possibly invalid). */
  writeText(text: string): void {
    const tmp = path.join(this.dir, '.relay.json.tmp');
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, this.file);
  }

  get pid(): number {
    return this.child!.pid!;
  }

  get stderr(): string {
    return this.stderrText;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts an incarnation (on the previous incarnation's gRPC port after a restart). */
  async start(): Promise<this> {
    const bind = this.address || '127.0.0.1:0';
    const child = spawnCli(['serve', '--config', this.file, '--bind', bind], ['ignore', 'ignore', 'pipe']);
    this.child = child;
    this.stderrText = '';
    let listening = false;
    child.stderr!.on('data', (b: Buffer) => {
      this.stderrText += b.toString();
      if (!listening && loggedAddress(this.stderrText, 'listening')) {
        listening = true;
        this.listeningAt = Date.now();
      }
    });
    await waitFor(() => child.exitCode !== null || loggedAddress(this.stderrText, 'metrics listening') !== undefined, 'the relay process to listen', START_TIMEOUT_MS, 10);
    if (child.exitCode !== null) throw new Error(`relay exited ${child.exitCode}: ${this.stderrText}`);
    this.address = loggedAddress(this.stderrText, 'listening')!;
    this.metricsAddress = loggedAddress(this.stderrText, 'metrics listening')!;
    return this;
  }

  /** Sends `signal` and resolves with the exit code (null when killed by a signal). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill(signal);
    return exited;
  }

  async metricsText(): Promise<string> {
    return (await fetch(`http://${this.metricsAddress}/metrics`)).text();
  }

  /** Resident set size of the process in bytes (from /proc). */
  rssBytes(): number {
    const status = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status);
    if (!kb) throw new Error('no VmRSS in /proc status');
    return Number(kb[1]) * 1024;
  }

  /** JSON log events of the current incarnation. */
  events(): { msg: string; level?: number; [k: string]: unknown }[] {
    return this.stderrText
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string });
  }

  async close(): Promise<void> {
    await this.stop('SIGKILL');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Sum of every series of `name` in a Prometheus text (0 when absent). */
export function metricSum(text: string, name: string, labelFilter = ''): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!(line.startsWith(`${name} `) || line.startsWith(`${name}{`))) continue;
    if (labelFilter && !line.includes(labelFilter)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
