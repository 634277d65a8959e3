// A simulated engine in its own process (engine-child.ts), so that a test can kill it with SIGKILL
// mid-burst the way an engine dies: its sockets closed by the kernel, whatever it had not sent lost.
// Every batch it published is reported over IPC (in publication order) to whoever follows it.
import { fork, type ChildProcess } from 'child_process';
import * as path from 'path';
import type { SimEvent, SimulatedEngineOptions } from '../../src/sim';
import { ROOT } from './cli-process';
import { waitFor } from './waitFor';

const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');
const CHILD = path.join(__dirname, 'engine-child.ts');
const START_TIMEOUT_MS = 30_000;

export type EngineCommand = { kind: 'run' } | { kind: 'stop' } | { kind: 'burst'; batches: number };
export type EngineReport =
  | { kind: 'ready'; pubEndpoint: string; replayEndpoint: string | undefined; dpSize: number; dpStartRank: number }
  | { kind: 'subscribed' }
  | { kind: 'batch'; rank: number; events: SimEvent[]; burst: boolean }
  | { kind: 'bursting' }
  | { kind: 'stopped' };

export class EngineProcess {
  private readonly child: ChildProcess;
  private readonly closed: Promise<void>;
  private readonly listeners: ((report: EngineReport) => void)[] = [];
  private stderrText = '';
  pubEndpoint = '';
  replayEndpoint: string | undefined;
  dpSize = 1;
  dpStartRank = 0;
  /** No HTTP: workers configured from it have no health or metrics URL. */
  readonly httpUrl = undefined;
  subscribed = false;
  batches = 0;
  /** Batches of a burst it published (and reported) before it ended. */
  burstBatches = 0;

  constructor(options: SimulatedEngineOptions) {
    // BigInt block hashes cross the IPC channel: structured clone, not JSON.
    this.child = fork(CHILD, [JSON.stringify(options)], { execArgv: ['-r', HOOK], serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.child.stderr!.on('data', (b: Buffer) => (this.stderrText += b.toString()));
    this.closed = new Promise((resolve) => this.child.once('close', () => resolve()));
    this.child.on('message', (report: EngineReport) => {
      if (report.kind === 'ready') Object.assign(this, { pubEndpoint: report.pubEndpoint, replayEndpoint: report.replayEndpoint, dpSize: report.dpSize, dpStartRank: report.dpStartRank });
      if (report.kind === 'subscribed') this.subscribed = true;
      if (report.kind === 'batch') {
        this.batches += 1;
        if (report.burst) this.burstBatches += 1;
      }
      for (const listener of this.listeners) listener(report);
    });
  }

  async start(): Promise<this> {
    await waitFor(() => this.pubEndpoint !== '' || this.child.exitCode !== null, 'the engine process to bind', START_TIMEOUT_MS, 10);
    if (this.pubEndpoint === '') throw new Error(`engine process exited ${this.child.exitCode}: ${this.stderrText}`);
    return this;
  }

  waitForSubscribers(): Promise<void> {
    return waitFor(() => this.subscribed, 'the relay to subscribe to the engine process', START_TIMEOUT_MS, 10);
  }

  /** Calls `onBatch` with every batch published from now on (the events and the rank that published them). */
  onBatch(onBatch: (rank: number, events: SimEvent[]) => void): void {
    this.listeners.push((r) => r.kind === 'batch' && onBatch(r.rank, r.events));
  }

  /** Publishes a workload step every few ms until the process ends. */
  run(): void {
    this.child.send({ kind: 'run' } satisfies EngineCommand);
  }

  /** Stops the workload; resolves once the last batch it published was reported. */
  stopWorkload(): Promise<void> {
    const stopped = new Promise<void>((resolve) => this.listeners.push((r) => r.kind === 'stopped' && resolve()));
    this.child.send({ kind: 'stop' } satisfies EngineCommand);
    return stopped;
  }

  /** Starts a burst of `batches` batches back to back; resolves once the first one was published. */
  burst(batches: number): Promise<void> {
    const started = new Promise<void>((resolve) => this.listeners.push((r) => r.kind === 'bursting' && resolve()));
    this.child.send({ kind: 'burst', batches } satisfies EngineCommand);
    return started;
  }

  /** Sends `signal` and resolves once the process is gone and every report it sent was delivered. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.closed;
  }

  /** Whether the process died of `signal` (a kill, not an exit of its own). */
  killedBy(signal: NodeJS.Signals): boolean {
    return this.child.signalCode === signal;
  }
}
