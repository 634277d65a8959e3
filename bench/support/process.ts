// CPU time of another process (a relay started as `kv-dc-relay serve`), from /proc on Linux.
import * as fs from 'fs';
import { INGEST_THREAD_NAME } from '../../src/config/defaults';

/** /proc/<pid>/stat counts CPU time in USER_HZ ticks, 100 per second on Linux. */
const PROC_TICK_MS = 10;

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

export function threadCpuMs(pid: number | undefined): ThreadCpuMs | undefined {
  try {
    const cpu: ThreadCpuMs = { main: 0, ingest: 0, zmq: 0, other: 0 };
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      const ms = statCpuMs(`/proc/${pid}/task/${tid}/stat`);
      const comm = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      if (Number(tid) === pid) cpu.main += ms;
      else if (comm === INGEST_THREAD_NAME) cpu.ingest += ms;
      // libzmq names its I/O threads ZMQbg/IO/<n>.
      else if (comm.startsWith('ZMQbg')) cpu.zmq += ms;
      else cpu.other += ms;
    }
    return cpu;
  } catch {
    return undefined;
  }
}
