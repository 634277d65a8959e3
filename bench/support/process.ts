// CPU time of another process (a relay started as `kv-dc-relay serve`), from /proc on Linux.
import * as fs from 'fs';

/** /proc/<pid>/stat counts CPU time in USER_HZ ticks, 100 per second on Linux. */
const PROC_TICK_MS = 10;

/** User + system CPU time the process used so far; undefined without /proc or once it exited. */
export function processCpuMs(pid: number | undefined): number | undefined {
  try {
    // Fields after the parenthesized command name: utime and stime are the 12th and 13th.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * PROC_TICK_MS;
  } catch {
    return undefined;
  }
}
