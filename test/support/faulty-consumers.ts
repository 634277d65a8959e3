// Misbehaving SubscribeKvPool consumers in a process of their own (faulty-consumers-child.ts), the
// way remote consumers are: their sessions, buffers and garbage cost the relay what they cost it, and
// nothing in the process that measures the well-behaved ones (a collection there, paid for their
// snapshot bytes, would show up as those ones' latency). One process serves a test's successive
// groups, so that a test comparing rounds with and without a group runs the same processes in both
// (a process started for each group would add its start-up, a compile and collections of its own,
// to the rounds with the group only).
import { fork, type ChildProcess } from 'child_process';
import * as path from 'path';
import type { ProducerIdentity } from '../../src/wire/types';
import { ROOT } from './cli-process';

const HOOK = path.join(ROOT, 'scripts', 'ts-hook.js');
const CHILD = path.join(__dirname, 'faulty-consumers-child.ts');

export interface FaultyGroup {
  address: string;
  producer: ProducerIdentity;
  /** Subscriber id prefix, unique per group. */
  tag: string;
  /** Never read a byte. */
  never: number;
  /** Read `slowReadBytes` every `slowReadMs` until told to stop. */
  slow: number;
  slowReadBytes: number;
  slowReadMs: number;
  /** Cancel (RST_STREAM CANCEL) once their response headers arrived, with the snapshot being written. */
  drops: number;
}

export type FaultyCommand = { kind: 'join'; group: FaultyGroup } | { kind: 'stopReading' } | { kind: 'finish' } | { kind: 'leave' };
export type FaultyReport = { kind: 'joined' } | { kind: 'stopped' } | { kind: 'ended'; ends: [number, string | undefined][] } | { kind: 'left' };

export class FaultyConsumers {
  private readonly child: ChildProcess;
  private readonly closed: Promise<void>;
  private stderrText = '';

  constructor() {
    this.child = fork(CHILD, [], { execArgv: ['-r', HOOK], serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.child.stderr!.on('data', (b: Buffer) => (this.stderrText += b.toString()));
    this.closed = new Promise((resolve) => this.child.once('close', () => resolve()));
  }

  /** Opens a group's streams; resolves once every never-reader and slow reader has its response headers and the drops are cancelled. */
  async join(group: FaultyGroup): Promise<void> {
    await this.request({ kind: 'join', group }, 'joined');
  }

  async stopReading(): Promise<void> {
    await this.request({ kind: 'stopReading' }, 'stopped');
  }

  /** Reads every never-reader and slow reader to its end; their (grpc-status, reason trailer) in order. */
  async finish(): Promise<[number, string | undefined][]> {
    const report = await this.request({ kind: 'finish' }, 'ended');
    return report.kind === 'ended' ? report.ends : [];
  }

  /** Destroys the group's sessions: its connections close, as a departed client's do. */
  async leave(): Promise<void> {
    await this.request({ kind: 'leave' }, 'left');
  }

  /** Ends the process; whatever connections are left close with it. */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.closed;
  }

  private request(command: FaultyCommand, kind: FaultyReport['kind']): Promise<FaultyReport> {
    return new Promise((resolve, reject) => {
      const onMessage = (report: FaultyReport): void => {
        if (report.kind !== kind) return;
        this.child.off('exit', onExit);
        this.child.off('message', onMessage);
        resolve(report);
      };
      const onExit = (code: number | null): void => reject(new Error(`faulty consumers exited ${code} before '${kind}': ${this.stderrText}`));
      this.child.on('message', onMessage);
      this.child.once('exit', onExit);
      this.child.send(command);
    });
  }
}
