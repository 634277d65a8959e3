// The driver's side of a DC process: spawn it, move its simulated time, hand it requests, and stop
// or kill it (a lost DC). Replies are matched by sequence number; a DC that dies fails every pending
// call instead of hanging the run.
import { fork, type ChildProcess } from 'child_process';
import type { DcPort } from '../driver';
import type { RankGauges } from '../engine/dc-engine';
import type { SimRequest } from '../request';
import type { DcProcessConfig, FromDc, Lifecycle, ToDc } from './dc-protocol';
import { simEntry } from './process-entry';

export interface DcEndpoints {
  pubEndpoint: string;
  replayEndpoint: string;
  httpUrl: string;
}

const START_TIMEOUT_MS = 60_000;

export class DcProcess implements DcPort {
  up = false;
  reachable = true;
  lastGauges: RankGauges[] = [];
  /** Where its relay connects (set once started). */
  endpoints!: DcEndpoints;
  private child: ChildProcess | null = null;
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (o: Lifecycle[]) => void; reject: (e: Error) => void }>();
  private subscribed: Promise<void> = Promise.resolve();

  private constructor(
    readonly config: DcProcessConfig,
    readonly oneWayMs: number,
  ) {}

  get name(): string {
    return this.config.name;
  }

  /** Starts the DC's engines; resolves with the endpoints its relay connects to. */
  static async start(config: DcProcessConfig, oneWayMs: number): Promise<{ dc: DcProcess; endpoints: DcEndpoints }> {
    const dc = new DcProcess(config, oneWayMs);
    const endpoints = await dc.spawn();
    return { dc, endpoints };
  }

  /** Resolves once the relay subscribed to every rank's KV events. */
  waitSubscribed(): Promise<void> {
    return this.subscribed;
  }

  advance(toMs: number): Promise<Lifecycle[]> {
    if (!this.child || !this.up) return Promise.resolve([]);
    const seq = this.seq++;
    return new Promise((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      this.post({ type: 'advance', seq, toMs });
    });
  }

  arrive(request: SimRequest, atMs: number): void {
    this.post({ type: 'arrive', request, atMs });
  }

  /** The whole DC is lost at once (its process killed); its caches are gone. */
  kill(): void {
    this.up = false;
    this.child?.kill('SIGKILL');
    this.child = null;
  }

  /** A fresh DC process (empty caches) in place of a lost one; simulated time starts at `nowMs`. */
  async restart(nowMs: number): Promise<DcEndpoints> {
    this.kill();
    const endpoints = await this.spawn();
    await this.advance(nowMs);
    return endpoints;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.up = false;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    this.post({ type: 'stop' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
    this.child = null;
  }

  private post(message: ToDc): void {
    if (this.child?.connected) this.child.send(message);
  }

  private spawn(): Promise<DcEndpoints> {
    const entry = simEntry('dc-process');
    const child = fork(entry.script, [], { execArgv: entry.execArgv, serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child = child;
    let resolveSubscribed!: () => void;
    this.subscribed = new Promise((resolve) => (resolveSubscribed = resolve));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`DC ${this.name} did not start in ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      child.on('message', (message: FromDc) => {
        switch (message.type) {
          case 'ready':
            clearTimeout(timer);
            this.up = true;
            this.endpoints = { pubEndpoint: message.pubEndpoint, replayEndpoint: message.replayEndpoint, httpUrl: message.httpUrl };
            resolve(this.endpoints);
            return;
          case 'subscribed':
            resolveSubscribed();
            return;
          case 'advanced': {
            this.lastGauges = message.gauges;
            const w = this.waiting.get(message.seq);
            this.waiting.delete(message.seq);
            w?.resolve(message.outputs);
            return;
          }
          case 'error':
            this.failAll(new Error(`DC ${this.name}: ${message.message}`));
            reject(new Error(`DC ${this.name}: ${message.message}`));
            return;
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (this.child === child) this.up = false;
        // A killed DC's pending calls resolve empty: its requests are failed by the driver, not the run.
        for (const w of this.waiting.values()) w.resolve([]);
        this.waiting.clear();
        reject(new Error(`DC ${this.name} exited (${signal ?? code})`));
      });
      child.send({ type: 'start', config: this.config } satisfies ToDc);
    });
  }

  private failAll(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}
