// A real Prometheus for tests: the `prometheus` binary (Debian prometheus; .ci/run installs it) with
// a temporary config and storage dir, on a free loopback port, scraping every second. Also promtool.
import { spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { freePort, ServerProcess } from './etcd-server';
import { waitFor } from './waitFor';

export const PROMETHEUS_BINARY = process.env.PROMETHEUS_BINARY ?? 'prometheus';
export const PROMTOOL_BINARY = process.env.PROMTOOL_BINARY ?? 'promtool';

const runs = (binary: string): boolean => spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0;
export const prometheusAvailable: boolean = runs(PROMETHEUS_BINARY) && runs(PROMTOOL_BINARY);

/** `describe` where Prometheus and promtool run here; elsewhere a skipped suite and a warning naming the reason. */
export function describeWithPrometheus(name: string, body: () => void): void {
  if (prometheusAvailable) {
    describe(name, body);
    return;
  }
  // eslint-disable-next-line no-console
  console.warn(`\n*** SKIPPED "${name}": ${PROMETHEUS_BINARY} or ${PROMTOOL_BINARY} is not installed; apt-get install prometheus ***\n`);
  describe.skip(name, body);
}

/** promtool with `args`, to its exit. */
export function promtool(args: string[]): { status: number | null; output: string } {
  const r = spawnSync(PROMTOOL_BINARY, args, { encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

export interface QueryResult {
  metric: Record<string, string>;
  value: [number, string];
}

export class PrometheusServer extends ServerProcess {
  private log = '';
  address = '';

  constructor() {
    super('prometheus');
  }

  /** Starts Prometheus scraping `targets` (job `kv-dc-relay`) every second, with `ruleFiles` loaded. */
  async start(targets: string[], ruleFiles: string[] = []): Promise<this> {
    const config = path.join(this.dir, 'prometheus.yml');
    fs.writeFileSync(
      config,
      JSON.stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: ruleFiles,
        scrape_configs: [{ job_name: 'kv-dc-relay', static_configs: [{ targets }] }],
      }),
    );
    this.address = `127.0.0.1:${await freePort()}`;
    const child = spawn(
      PROMETHEUS_BINARY,
      [`--config.file=${config}`, `--storage.tsdb.path=${path.join(this.dir, 'data')}`, `--web.listen-address=${this.address}`, '--log.level=warn'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.child = child;
    child.stderr!.on('data', (b: Buffer) => (this.log = (this.log + b.toString()).slice(-20_000)));
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited ${child.exitCode}: ${this.log}`);
      try {
        return (await fetch(`http://${this.address}/-/ready`)).ok;
      } catch {
        return false;
      }
    }, 'prometheus to be ready', 30_000, 50);
    return this;
  }

  private async api<T>(pathAndQuery: string): Promise<T> {
    const res = await fetch(`http://${this.address}/api/v1/${pathAndQuery}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${pathAndQuery}: ${body.error}`);
    return body.data;
  }

  /** An instant query now. */
  async query(expr: string): Promise<QueryResult[]> {
    return (await this.api<{ result: QueryResult[] }>(`query?query=${encodeURIComponent(expr)}`)).result;
  }

  /** The loaded rule groups as the rules API reports them (health, lastError per rule). */
  async rules(): Promise<{ name: string; rules: { name: string; health: string; lastError?: string }[] }[]> {
    return (await this.api<{ groups: { name: string; rules: { name: string; health: string; lastError?: string }[] }[] }>('rules')).groups;
  }
}
