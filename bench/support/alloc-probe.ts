// Preloaded into a process a bench measures (`node -r dist/bench/support/alloc-probe.js`, with
// ALLOC_PROBE_DIR set): counts the JS heap bytes each of its isolates (the main thread and every
// worker thread, which run the preload too) allocates between two SIGUSR2s, and where.
// V8's sampling heap profiler, told to keep the samples of objects collected since (by scavenges
// and full collections alike), sees every allocation, not only what survives; each sample stands
// for its share of the bytes, so the sum over samples counts them without bias (within ~1 % at a
// sampling interval of 256 bytes over a few thousand messages, against a known allocation). Unlike
// CPU time, the count does not move with the host: the same code and messages allocate the same.
// (New-space deltas between collections miss what each scavenge frees; `--trace-gc-nvp`'s
// `allocated=` is exact but only per collection, which at 100 messages/s comes every few seconds.)
// On the second signal the main thread writes ALLOC_PROBE_DIR/<pid>-window-<n>.json: one IsolateAllocation
// per isolate; with ALLOC_PROBE_PROFILES=<dir>, each isolate's profile goes there too (.heapprofile,
// for Chrome DevTools; named by process, window and thread). A worker that does not answer within REPLY_TIMEOUT_MS is left out.
import * as fs from 'fs';
import * as inspector from 'inspector';
import * as path from 'path';
import { BroadcastChannel, isMainThread, threadId } from 'worker_threads';

/** One isolate's allocation over a window. */
export interface IsolateAllocation {
  thread: 'main' | 'worker';
  threadId: number;
  /** The window's length on this isolate. */
  ms: number;
  /** JS heap bytes allocated in it (estimated from the samples). */
  bytes: number;
  samples: number;
  /** The allocating functions with the most bytes: `bytes name file:line`. */
  sites: string[];
}

export const ALLOC_PROBE_SIGNAL = 'SIGUSR2';
const CHANNEL = 'kv-dc-relay-bench/alloc-probe';
const SAMPLING_INTERVAL_BYTES = Number(process.env.ALLOC_PROBE_INTERVAL ?? 256);
const SITES = 12;
const REPLY_TIMEOUT_MS = 2_000;

type Message =
  | { type: 'hello'; threadId: number }
  | { type: 'start' | 'stop'; window: number }
  | { type: 'started'; threadId: number; window: number }
  | { type: 'stopped'; threadId: number; window: number; allocation: IsolateAllocation };

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}
interface SamplingProfile {
  head: ProfileNode;
  samples: unknown[];
}

const dir = process.env.ALLOC_PROBE_DIR;
if (dir !== undefined) install(dir);

function install(outDir: string): void {
  const session = new inspector.Session();
  session.connect();
  const call = <T>(method: string, params?: object): Promise<T> =>
    new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result as T))));
  const channel = new BroadcastChannel(CHANNEL);
  channel.unref();
  const send = (m: Message): void => channel.postMessage(m);
  let startedAt = 0;
  // The first inspector call and performance.now() load code and build state (~100 KB of heap): done
  // here, not inside the first window.
  void call('HeapProfiler.startSampling').then(() => call('HeapProfiler.stopSampling'));
  performance.now();

  const start = async (): Promise<void> => {
    await call('HeapProfiler.startSampling', { samplingInterval: SAMPLING_INTERVAL_BYTES, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    startedAt = performance.now();
  };
  const stop = async (window: number): Promise<IsolateAllocation> => {
    const ms = performance.now() - startedAt;
    const { profile } = await call<{ profile: SamplingProfile }>('HeapProfiler.getSamplingProfile');
    await call('HeapProfiler.stopSampling');
    const profiles = process.env.ALLOC_PROBE_PROFILES;
    if (profiles) fs.writeFileSync(path.join(profiles, `${process.pid}-window-${window}-thread-${threadId}.heapprofile`), JSON.stringify(profile));
    return { thread: isMainThread ? 'main' : 'worker', threadId, ms, samples: profile.samples.length, ...summarize(profile.head) };
  };

  if (!isMainThread) {
    channel.onmessage = (e: unknown) => {
      const m = (e as { data: Message }).data;
      if (m.type === 'start') void start().then(() => send({ type: 'started', threadId, window: m.window }));
      else if (m.type === 'stop') void stop(m.window).then((allocation) => send({ type: 'stopped', threadId, window: m.window, allocation }));
    };
    send({ type: 'hello', threadId });
    return;
  }

  const workers = new Set<number>();
  const replies = new Map<number, Message>();
  let arrived: () => void = () => undefined;
  channel.onmessage = (e: unknown) => {
    const m = (e as { data: Message }).data;
    if (m.type === 'hello') workers.add(m.threadId);
    else if (m.type === 'started' || m.type === 'stopped') {
      replies.set(m.threadId, m);
      arrived();
    }
  };
  /** Every known worker's reply to `m`, or those that came within REPLY_TIMEOUT_MS. */
  const ask = async (m: Message): Promise<Message[]> => {
    replies.clear();
    send(m);
    const deadline = performance.now() + REPLY_TIMEOUT_MS;
    while (replies.size < workers.size && performance.now() < deadline) {
      await new Promise<void>((resolve) => {
        arrived = resolve;
        setTimeout(resolve, REPLY_TIMEOUT_MS).unref();
      });
    }
    return [...replies.values()];
  };

  let window = 0;
  let sampling = false;
  process.on(ALLOC_PROBE_SIGNAL, () => {
    if (!sampling) {
      sampling = true;
      window += 1;
      void Promise.all([start(), ask({ type: 'start', window })]).then(() => fs.writeFileSync(path.join(outDir, `${process.pid}-window-${window}.started`), ''));
      return;
    }
    sampling = false;
    void Promise.all([stop(window), ask({ type: 'stop', window })]).then(([own, answers]) => {
      const all = [own, ...answers.flatMap((a) => (a.type === 'stopped' ? [a.allocation] : []))];
      const file = path.join(outDir, `${process.pid}-window-${window}.json`);
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(all));
      fs.renameSync(`${file}.tmp`, file);
    });
  });
}

/** Bytes in all, and the functions that allocated the most of them. */
function summarize(head: ProfileNode): { bytes: number; sites: string[] } {
  const bySite = new Map<string, number>();
  let bytes = 0;
  const walk = (node: ProfileNode): void => {
    bytes += node.selfSize;
    if (node.selfSize > 0) {
      const { functionName, url, lineNumber } = node.callFrame;
      const site = `${functionName || '(anonymous)'} ${path.basename(url)}:${lineNumber + 1}`;
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    }
    node.children.forEach(walk);
  };
  walk(head);
  const sites = [...bySite.entries()].sort((a, b) => b[1] - a[1]).slice(0, SITES).map(([site, b]) => `${b} ${site}`);
  return { bytes, sites };
}
