// CPU time of another process (a relay started as `kv-dc-relay serve`), from /proc on Linux.
import * as fs from 'fs';
import { INGEST_THREAD_NAME } from '../../src/config/defaults';

/** /proc/<pid>/stat counts CPU time in USER_HZ ticks, 100 per second on Linux. */
const PROC_TICK_MS = 10;
const NS_PER_MS = 1e6;

/** User + system CPU time in a /proc stat file (a process's or a thread's). */
function statCpuMs(file: string): number {
  // Fields after the parenthesized command name: utime and stime are the 12th and 13th.
  const fields = fs.readFileSync(file, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * PROC_TICK_MS;
}

/** User + system CPU time the process used so far; undefined without /proc or once it exited. */
export function processCpuMs(pid: number | undefined): number | undefined {
  try {
    return statCpuMs(`/proc/${pid}/stat`);
  } catch {
    return undefined;
  }
}

/** CPU time so far of the process's main thread, its ingest threads, its ZMQ I/O threads and the rest; undefined without /proc. */
export interface ThreadCpuMs {
  main: number;
  /** The ingest threads (named INGEST_THREAD_NAME), with the pools they host. */
  ingest: number;
  zmq: number;
  /** V8's and libuv's helper threads (GC, libuv's pool: pool applies), the Dynamo plane's thread. */
  other: number;
}

/** The per-kind difference `after - before`. */
export function threadCpuDelta(before: ThreadCpuMs, after: ThreadCpuMs): ThreadCpuMs {
  return { main: after.main - before.main, ingest: after.ingest - before.ingest, zmq: after.zmq - before.zmq, other: after.other - before.other };
}

/**
 * CPU time so far of each kind of thread, from the scheduler's nanosecond count (schedstat): /proc's
 * user and system times come in 10 ms ticks, as coarse as a light process's whole second of work
 * (a bare SUB at 100 messages/s reads 200-300 µs per message over 4 s in steps of 25). Threads
 * that ended are not counted.
 */
export function threadCpuMs(pid: number | undefined): ThreadCpuMs | undefined {
  return byThreadKind(pid, (task) => Number(fs.readFileSync(`${task}/schedstat`, 'utf8').split(' ')[0]) / NS_PER_MS);
}

/** The kinds' sum: the CPU time so far of the process's live threads. */
export function totalCpuMs(t: ThreadCpuMs): number {
  return t.main + t.ingest + t.zmq + t.other;
}

/**
 * Wake-ups so far by thread kind (the same kinds as threadCpuMs): a thread's voluntary context
 * switches, each a block in epoll or on a lock that something had to end. On a VM a wake-up costs
 * tens of microseconds of CPU, so at low message rates they, not the work, set a process's CPU.
 */
export function threadWakeups(pid: number | undefined): ThreadCpuMs | undefined {
  return byThreadKind(pid, (task) => Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(fs.readFileSync(`${task}/status`, 'utf8'))?.[1] ?? 0));
}

/** `value` of each of the process's threads, summed by kind; undefined without /proc. */
function byThreadKind(pid: number | undefined, value: (task: string) => number): ThreadCpuMs | undefined {
  try {
    const sums: ThreadCpuMs = { main: 0, ingest: 0, zmq: 0, other: 0 };
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      const task = `/proc/${pid}/task/${tid}`;
      const v = value(task);
      const comm = fs.readFileSync(`${task}/comm`, 'utf8').trim();
      if (Number(tid) === pid) sums.main += v;
      else if (comm === INGEST_THREAD_NAME) sums.ingest += v;
      // libzmq names its I/O threads ZMQbg/IO/<n>.
      else if (comm.startsWith('ZMQbg')) sums.zmq += v;
      else sums.other += v;
    }
    return sums;
  } catch {
    return undefined;
  }
}
