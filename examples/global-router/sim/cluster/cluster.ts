// The evaluated cluster: per DC a process of engines and a relay process over them, and a WAN delay
// proxy per relay in front of the routers; plus the faults done to it (a DC lost and back, a relay
// restarted, a WAN partitioned). Routers reach each relay through its proxy.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { DcTarget } from '../../router';
import type { RankConfig } from '../engine/rank';
import type { DcSpec } from '../options';
import { DcProcess } from './dc-handle';
import { DelayProxy } from './delay-proxy';
import { RelayProcess, type RelaySpec } from './relay-process';

export interface ClusterSpec {
  dcs: readonly DcSpec[];
  rank: RankConfig;
  model: string;
  loadWindowMs: number;
  /** Wall ms per simulated ms: the proxies delay by oneWayMs × this, so the WAN is right in simulated time. */
  wallPerSimMs: number;
}

interface Member {
  spec: DcSpec;
  dc: DcProcess;
  relay: RelayProcess;
  proxy: DelayProxy;
  relaySpec: RelaySpec;
}

export class Cluster {
  private constructor(
    private readonly members: Member[],
    private readonly dir: string,
  ) {}

  static async start(spec: ClusterSpec): Promise<Cluster> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kv-dc-relay-sim-'));
    const members: Member[] = [];
    try {
      await Promise.all(
        spec.dcs.map(async (d) => {
          const { dc, endpoints } = await DcProcess.start({ name: d.name, ranks: d.ranks, rank: spec.rank, model: spec.model }, d.oneWayMs);
          const relaySpec: RelaySpec = { dcId: d.name, model: spec.model, ranks: d.ranks, blockSize: spec.rank.blockSize, capacityBlocks: spec.rank.capacityBlocks, maxNumSeqs: spec.rank.maxNumSeqs, loadWindowMs: spec.loadWindowMs };
          const relay = await RelayProcess.start(relaySpec, endpoints, dir);
          await dc.waitSubscribed();
          const proxy = await DelayProxy.start({ target: relay.address, delayMs: d.oneWayMs * spec.wallPerSimMs });
          members.push({ spec: d, dc, relay, proxy, relaySpec });
        }),
      );
    } catch (err) {
      await new Cluster(members, dir).stop();
      throw err;
    }
    members.sort((a, b) => spec.dcs.indexOf(a.spec) - spec.dcs.indexOf(b.spec));
    return new Cluster(members, dir);
  }

  get dcs(): DcProcess[] {
    return this.members.map((m) => m.dc);
  }

  /** What routers connect to: each relay through its WAN, with the DC's round trip. */
  targets(): DcTarget[] {
    return this.members.map((m) => ({ name: m.spec.name, address: m.proxy.address, rttMs: 2 * m.spec.oneWayMs }));
  }

  /** The whole DC is lost: engines and relay die at once. */
  async loseDc(name: string): Promise<void> {
    const m = this.member(name);
    m.dc.kill();
    await m.relay.kill();
  }

  /** A lost DC comes back with empty caches: fresh engines, a fresh relay, the WAN pointed at it. */
  async restoreDc(name: string, nowMs: number): Promise<void> {
    const m = this.member(name);
    const endpoints = await m.dc.restart(nowMs);
    m.relay = await RelayProcess.start(m.relaySpec, endpoints, this.dir);
    await m.dc.waitSubscribed();
    m.proxy.retarget(m.relay.address);
  }

  /** The relay process dies and is started again over the same engines (which keep serving). */
  async restartRelay(name: string): Promise<void> {
    const m = this.member(name);
    await m.relay.kill();
    m.relay = await RelayProcess.start(m.relaySpec, m.dc.endpoints, this.dir);
    m.proxy.retarget(m.relay.address);
  }

  /** The WAN to the DC is cut (relay stream held, new requests fail) or healed. */
  partition(name: string, partitioned: boolean): void {
    const m = this.member(name);
    m.proxy.setPartitioned(partitioned);
    m.dc.reachable = !partitioned;
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.members.map(async (m) => {
        await m.proxy.close();
        await m.relay.stop();
        await m.dc.stop();
      }),
    );
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private member(name: string): Member {
    const m = this.members.find((x) => x.spec.name === name);
    if (!m) throw new RangeError(`no DC named ${name}`);
    return m;
  }
}
