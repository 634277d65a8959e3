// Worker liveness from HTTP health probes (relay-config.md, Details: health).
//
// Input: one HealthTarget per worker that has a `health.url`. Each target is probed right away and
// then every `probeMs` (one probe in flight per worker; a probe times out after `probeMs`). Until a
// worker's first HTTP response its availability is not authoritative (undefined); refused
// connections and timeouts are not responses. After that, a 2xx answer means live and anything
// else (non-2xx, refused, timeout) not live.
import { fetchWithDeadline } from '../fetch-deadline';
import type { Unsubscribe } from '../publication/source';

export interface HealthTarget {
  workerId: bigint;
  url: string;
}

interface Probe {
  url: string;
  live: boolean | undefined;
  abort: AbortController;
  timer?: NodeJS.Timeout;
}

export class HealthMonitor {
  private readonly probes = new Map<bigint, Probe>();
  private readonly listeners = new Set<() => void>();

  constructor(private readonly probeMs: number) {}

  /**
   * Replaces the monitored set. A worker whose URL is unchanged keeps its state and cadence; a new
   * or changed URL starts over as not authoritative. Emits a change if availability was dropped.
   */
  setTargets(targets: readonly HealthTarget[]): void {
    const wanted = new Map(targets.map((t) => [t.workerId, t.url]));
    let dropped = false;
    for (const [id, probe] of this.probes) {
      if (wanted.get(id) === probe.url) continue;
      this.stop(probe);
      this.probes.delete(id);
      dropped ||= probe.live !== undefined;
    }
    for (const [id, url] of wanted) {
      if (this.probes.has(id)) continue;
      const probe: Probe = { url, live: undefined, abort: new AbortController() };
      this.probes.set(id, probe);
      void this.run(probe);
    }
    if (dropped) this.emit();
  }

  /** true/false once the worker's health URL has answered; undefined before that or if not monitored. */
  availability(workerId: bigint): boolean | undefined {
    return this.probes.get(workerId)?.live;
  }

  /**
   * A worker's liveness as the topology input wants it: a monitored worker (health URL set) follows
   * its probes and `staticLive` is ignored; any other worker is `staticLive` (its config `live`).
   */
  liveness(workerId: bigint, staticLive: boolean): boolean | undefined {
    const probe = this.probes.get(workerId);
    return probe ? probe.live : staticLive;
  }

  /** Called after any worker's availability changed. Listeners must not throw. */
  onChange(listener: () => void): Unsubscribe {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    for (const probe of this.probes.values()) this.stop(probe);
    this.probes.clear();
    this.listeners.clear();
  }

  private async run(probe: Probe): Promise<void> {
    const started = Date.now();
    const answer = await this.probeOnce(probe);
    if (probe.abort.signal.aborted) return;
    const live = answer ?? (probe.live === undefined ? undefined : false);
    probe.timer = setTimeout(() => void this.run(probe), Math.max(0, this.probeMs - (Date.now() - started)));
    if (live !== probe.live) {
      probe.live = live;
      this.emit();
    }
  }

  /** The HTTP answer (2xx or not), or undefined when there was no response at all. */
  private async probeOnce(probe: Probe): Promise<boolean | undefined> {
    try {
      return await fetchWithDeadline(probe.url, this.probeMs, probe.abort.signal, (res) => {
        // Only the status matters; discarding the body frees the connection.
        res.body?.cancel().catch(() => undefined);
        return res.ok;
      });
    } catch {
      return undefined;
    }
  }

  private stop(probe: Probe): void {
    probe.abort.abort();
    clearTimeout(probe.timer);
  }

  private emit(): void {
    for (const listener of this.listeners) listener();
  }
}
