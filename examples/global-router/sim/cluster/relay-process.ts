// A DC's relay as its own process, started as operators start it (`kv-dc-relay serve --config`),
// over the DC process's engines: one aggregated endpoint whose one worker has the DC's ranks.
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import type { DcEndpoints } from './dc-handle';
import { relayEntry } from './process-entry';

export const POOL_NAMESPACE = 'prod';
const START_TIMEOUT_MS = 60_000;

export interface RelaySpec {
  dcId: string;
  model: string;
  ranks: number;
  blockSize: number;
  capacityBlocks: number;
  maxNumSeqs: number;
  /** How often the relay scrapes and publishes load (KV usage). */
  loadWindowMs: number;
}

export function relayConfig(spec: RelaySpec, engines: DcEndpoints): Record<string, unknown> {
  return {
    dcId: spec.dcId,
    bind: '127.0.0.1:0',
    // Room for every rank's blocks with headroom: the pool filter stays sparse.
    expectedUniqueBlocks: 2 * spec.ranks * spec.capacityBlocks,
    timing: { publicationDelayMs: 1, loadWindowMs: spec.loadWindowMs },
    endpoints: [
      {
        namespace: POOL_NAMESPACE,
        component: 'backend',
        endpoint: 'generate',
        model: { name: spec.model, kvBlockSize: spec.blockSize },
        workerType: 'aggregated',
        workers: [
          {
            id: 1,
            dpSize: spec.ranks,
            totalKvBlocks: spec.capacityBlocks,
            maxNumSeqs: spec.maxNumSeqs,
            health: { url: `${engines.httpUrl}/health` },
            metrics: { url: `${engines.httpUrl}/metrics`, format: 'vllm' },
            kvEvents: { endpoint: engines.pubEndpoint, replayEndpoint: engines.replayEndpoint },
          },
        ],
      },
    ],
  };
}

export class RelayProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly address: string,
  ) {}

  /** Writes the config into `dir` and starts the relay; resolves once it listens. */
  static async start(spec: RelaySpec, engines: DcEndpoints, dir: string): Promise<RelayProcess> {
    const configFile = path.join(dir, `relay-${spec.dcId}.json`);
    fs.writeFileSync(configFile, JSON.stringify(relayConfig(spec, engines)));
    const entry = relayEntry();
    const child = spawn(process.execPath, [...entry.execArgv, entry.script, 'serve', '--config', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    const address = await new Promise<string>((resolve, reject) => {
      let buffered = '';
      const timer = setTimeout(() => reject(new Error(`relay ${spec.dcId} did not listen in ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      const onData = (b: Buffer) => {
        buffered += b.toString();
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (!line.startsWith('{')) continue;
          const ev = JSON.parse(line) as { msg?: string; address?: string; level?: number };
          if (ev.msg === 'listening' && ev.address) {
            clearTimeout(timer);
            child.stderr!.off('data', onData);
            child.stderr!.resume(); // keep draining its logs
            resolve(ev.address);
            return;
          }
        }
      };
      child.stderr!.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`relay ${spec.dcId} exited (${code}) before listening: ${buffered.slice(-500)}`));
      });
    });
    return new RelayProcess(child, address);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** An orderly stop (SIGTERM: streams end, connections close). */
  async stop(): Promise<void> {
    await this.end('SIGTERM');
  }

  /** The relay process dies at once. */
  async kill(): Promise<void> {
    await this.end('SIGKILL');
  }

  private async end(signal: NodeJS.Signals): Promise<void> {
    if (!this.running) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 6_000);
    await exited;
    clearTimeout(timer);
  }
}
