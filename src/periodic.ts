// Periodic housekeeping of the same interval shares one timer. Each task on a timer of its own runs at
// its own phase (the second it started), so an idle relay woke once per task per interval: the
// diagnostics round and the config file's poll, 90 ms apart every second (issue 30 item 2: on this
// VM a wake-up of an idle main thread costs ~80 µs of CPU). One timer per interval wakes it once.
// The timer never keeps the process alive (unref), as none of its tasks did on its own.

interface Group {
  timer: NodeJS.Timeout;
  readonly tasks: Set<() => void>;
}

const groups = new Map<number, Group>();

/**
 * Runs `task` every `intervalMs` (on the first tick of the interval's shared timer after this call)
 * until the returned stop function is called. Tasks of one tick run in the order they were added.
 */
export function everyInterval(intervalMs: number, task: () => void): () => void {
  let group = groups.get(intervalMs);
  if (!group) {
    const tasks = new Set<() => void>();
    // A Set's iteration visits the tasks added during it and skips those stopped before their turn.
    const timer = setInterval(() => {
      for (const t of tasks) t();
    }, intervalMs);
    timer.unref();
    group = { timer, tasks };
    groups.set(intervalMs, group);
  }
  const shared = group;
  // A wrapper of its own: the same function added twice runs twice and stops separately.
  const entry = (): void => task();
  shared.tasks.add(entry);
  return () => {
    if (!shared.tasks.delete(entry) || shared.tasks.size > 0) return;
    clearInterval(shared.timer);
    groups.delete(intervalMs);
  };
}
