// A relay as `kv-dc-relay serve` in a process of its own, as operators run it: the benches drive it
// from outside over ZMQ and gRPC and read its /metrics and its CPU time.
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { createGunzip } from 'zlib';
import { RELAY_CONTRACT_MARKER } from '../../src/wire/constants';
import { makeClient } from '../../src/wire/service';
import type { KvPoolCatalogUpdate, KvPoolDescriptor, ProducerIdentity } from '../../src/wire/types';
import { processCpuMs, threadCpuMs, threadWakeups, type ThreadCpuMs } from './process';

/** The chaos tests' reader of /metrics text serves the benches too. */
export { metricSum } from '../../test/support/relay-process';

/**
 * Extra node flags for every relay process a bench starts, space-separated (e.g. `--cpu-prof
 * --cpu-prof-dir=/tmp/p` to profile it; how #8's burst fix was found).
 */
export const RELAY_NODE_ARGS = (process.env.BENCH_RELAY_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

export interface RelayProcess {
  /** gRPC listener, HOST:PORT. */
  address: string;
  /** /metrics listener, HOST:PORT (the config given must set `metricsBind`). */
  metricsAddress: string;
  pid: number | undefined;
  /** CPU time (user + system) the process used so far; undefined without /proc. */
  cpuMs(): number | undefined;
  /** The same per thread kind (a thread that ended since is not counted). */
  threadCpuMs(): ThreadCpuMs | undefined;
  /** Its wake-ups so far per thread kind (process.ts threadWakeups). */
  threadWakeups(): ThreadCpuMs | undefined;
  /** Its last stderr lines (JSON logs), for a bench's error message. */
  lastLog(): string;
  stop(): Promise<void>;
}

const KEPT_LOG_LINES = 20;

/** Signals that end a bench from outside (Ctrl-C, `kill`, a closed terminal). */
const ENDING_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let exitOnSignal = false;

/**
 * Kills `child` if this process exits first, e.g. on an exception thrown past a bench's cleanup, or
 * on a signal that ends the bench: no relay, firehose or bare hop is left running on the shared
 * machine. A signal's default action ends the process without its 'exit' event (a relay left from a
 * bench killed with `kill` ran on for an hour), so the first call turns those signals into an exit.
 */
export function killWithThisProcess(child: ChildProcess, cleanup: () => void = () => undefined): void {
  if (!exitOnSignal) {
    exitOnSignal = true;
    for (const signal of ENDING_SIGNALS) process.once(signal, () => process.exit(128 + os.constants.signals[signal]));
  }
  const kill = (): void => {
    child.kill('SIGKILL');
    cleanup();
  };
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
}

/** Resolves with the first stderr line `match` maps to a value; rejects if the process exits first. */
export function waitForLine(child: ChildProcess, match: (line: string) => string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stderr!.on('data', (b: Buffer) => {
      buffered += b.toString();
      for (const line of buffered.split('\n')) {
        const found = match(line);
        if (found !== undefined) return resolve(found);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${buffered}`)));
  });
}

const logged = (msg: string) => (line: string): string | undefined =>
  line.includes(`"msg":"${msg}"`) ? (JSON.parse(line) as { address: string }).address : undefined;

/** Starts `serve` on `config` (written to a temporary file); `launch` adds node flags and sets its environment. */
export async function startRelayProcess(config: object, launch?: { nodeArgs: string[]; env: NodeJS.ProcessEnv }): Promise<RelayProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvrelay-bench-'));
  const configFile = path.join(dir, 'relay.json');
  fs.writeFileSync(configFile, JSON.stringify(config));
  const child = spawn(process.execPath, [...RELAY_NODE_ARGS, ...(launch?.nodeArgs ?? []), path.join(__dirname, '..', '..', 'src', 'cli', 'main.js'), 'serve', '--config', configFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: launch?.env,
  });
  killWithThisProcess(child, () => fs.rmSync(dir, { recursive: true, force: true }));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Measured windows start once ingest runs: the relay listens before its ingest threads have
    // started (and compiled their code), which a window would otherwise count as ingest.
    const [address, metricsAddress] = await Promise.all([
      waitForLine(child, logged('listening')),
      waitForLine(child, logged('metrics listening')),
      waitForLine(child, (line) => (line.includes('"msg":"ingest started"') ? line : undefined)),
    ]);
    child.stderr!.removeAllListeners('data');
    let kept: string[] = [];
    child.stderr!.on('data', (b: Buffer) => (kept = [...kept, ...b.toString().split('\n').filter((l) => l !== '')].slice(-KEPT_LOG_LINES)));
    const exitNote = (): string => (child.exitCode !== null || child.signalCode !== null ? `relay exited (${child.exitCode ?? child.signalCode})\n` : '');
    return { address, metricsAddress, pid: child.pid, cpuMs: () => processCpuMs(child.pid), threadCpuMs: () => threadCpuMs(child.pid), threadWakeups: () => threadWakeups(child.pid), lastLog: () => exitNote() + kept.join('\n'), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The Prometheus text of a relay's /metrics, on a connection of its own: a kept-alive one can be
 * closed by the server's idle timeout just as it is reused (ECONNRESET), all the likelier when a
 * loaded relay runs its timers late.
 */
export function scrape(metricsAddress: string, acceptEncoding?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const headers = acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding };
    const req = http.get(`http://${metricsAddress}/metrics`, { agent: false, headers }, (res) => {
      // A gzip answer (to a client that asked, as Prometheus does) is decompressed off the loop.
      const body = res.headers['content-encoding'] === 'gzip' ? res.pipe(createGunzip()) : res;
      let text = '';
      body.setEncoding('utf8');
      body.on('data', (chunk: string) => (text += chunk));
      body.on('end', () => resolve(text));
      body.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** The producer of each catalog pool by its model name, once the catalog lists `count` pools. */
export async function catalogProducers(address: string, count: number): Promise<Map<string, ProducerIdentity>> {
  const client = makeClient(address);
  const catalog = client.watchKvPoolCatalog({ subscriberId: 'bench/catalog', contractMarker: RELAY_CONTRACT_MARKER });
  try {
    const pools = await new Promise<KvPoolDescriptor[]>((resolve, reject) => {
      catalog.on('data', (update: KvPoolCatalogUpdate) => {
        const listed = update.snapshot?.pools ?? [];
        if (listed.length >= count) resolve(listed);
      });
      catalog.once('error', reject);
    });
    return new Map(pools.map((p) => [p.registrations[0].canonicalModelId, p.producer!]));
  } finally {
    catalog.on('error', () => undefined); // our own cancel
    catalog.cancel();
    client.close();
  }
}
