// A live copy of every key under an etcd prefix: a full read, then a watch from the revision after
// it. When the watch is lost (etcd down, a network loss, a compacted revision) the copy is kept as
// it was and marked stale, and a new full read with backoff replaces it as one change once etcd
// answers again; the watch resumes from that read's revision. Listeners hear each change once per
// etcd response, never a half-applied batch.
//
// The full read is paged at one revision: one Range response over everything under the prefix was
// refused by grpc-js past its 4 MiB receive limit (five Dynamo values at their 1 MiB bound), and the
// read then failed and was retried forever, so a relay never served the deployment, or stayed stale
// after a lost watch. A page that is still over the limit (values up to etcd's 1.5 MiB request bound)
// is asked again with half the keys; each page read whole doubles them again, up to the default.
import { EventEmitter } from 'events';
import { GRPCResourceExhastedError, Range, type Etcd3, type IKeyValue, type IWatchResponse, type Watcher } from 'etcd3';
import { ETCD_READ_PAGE_KEYS, ETCD_RETRY_INITIAL_MS, ETCD_RETRY_MAX_MS } from '../config/defaults';
import { Backoff } from '../client/backoff';
import type { Logger } from '../log';
import { etcdErrorText } from './etcd-client';

export interface MirrorEvents {
  /** The entries changed (after the first read, each watch batch and each resync). */
  change: [];
  /** true when the watch was lost, false once a full read succeeded again. */
  stale: [boolean];
}

export class PrefixMirror extends EventEmitter<MirrorEvents> {
  /** Key relative to the prefix → value (UTF-8). */
  readonly entries = new Map<string, string>();
  private revisionValue = 0n;
  private staleValue = true;
  private synced = false;
  private watcher: Watcher | undefined;
  private retry: NodeJS.Timeout | undefined;
  private readonly backoff = new Backoff({ initialMs: ETCD_RETRY_INITIAL_MS, maxMs: ETCD_RETRY_MAX_MS });
  private closed = false;

  constructor(
    private readonly client: Etcd3,
    readonly prefix: string,
    private readonly logger: Logger,
  ) {
    super();
  }

  /** Starts reading; resolves after the first successful read (retrying until then). */
  start(): Promise<void> {
    const first = new Promise<void>((resolve) => this.once('change', resolve));
    void this.sync();
    return first;
  }

  /** True until the first read and while the watch is lost. */
  get stale(): boolean {
    return this.staleValue;
  }

  /** The etcd revision the entries reflect. */
  get revision(): bigint {
    return this.revisionValue;
  }

  close(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.dropWatcher();
  }

  private async sync(): Promise<void> {
    this.retry = undefined;
    if (this.closed) return;
    let kvs: IKeyValue[];
    let revision: bigint;
    try {
      ({ kvs, revision } = await this.readAll());
    } catch (err) {
      if (this.closed) return;
      const delayMs = this.backoff.next();
      this.logger.error({ prefix: this.prefix, err: etcdErrorText(err), retryInMs: delayMs }, this.synced ? 'etcd resync failed; serving the last known deployment' : 'etcd is unreachable; retrying');
      this.retry = setTimeout(() => void this.sync(), delayMs);
      return;
    }
    if (this.closed) return;
    this.backoff.reset();
    this.entries.clear();
    for (const kv of kvs) this.entries.set(this.relative(kv.key), kv.value.toString('utf8'));
    this.revisionValue = revision;
    this.watch(revision + 1n);
    if (this.synced) this.logger.info({ prefix: this.prefix, revision: revision.toString(), keys: kvs.length }, 'etcd resynced');
    this.synced = true;
    this.setStale(false);
    this.emit('change');
  }

  /** Every key under the prefix as of one revision, in pages. */
  private async readAll(): Promise<{ kvs: IKeyValue[]; revision: bigint }> {
    const all = Range.prefix(this.prefix);
    const kvs: IKeyValue[] = [];
    let start = all.start;
    let revision: string | undefined;
    let pageKeys = ETCD_READ_PAGE_KEYS;
    for (;;) {
      const page = this.client.getAll().inRange({ start, end: all.end }).limit(pageKeys);
      if (revision !== undefined) page.revision(revision);
      let res;
      try {
        res = await page.exec();
      } catch (err) {
        if (err instanceof GRPCResourceExhastedError && pageKeys > 1) {
          pageKeys = Math.ceil(pageKeys / 2);
          continue;
        }
        throw err;
      }
      revision ??= res.header.revision;
      for (const kv of res.kvs) kvs.push(kv);
      pageKeys = Math.min(ETCD_READ_PAGE_KEYS, pageKeys * 2); // past a few big values, small ones again
      if (!res.more || res.kvs.length === 0) return { kvs, revision: BigInt(revision) };
      // The next page starts just after this page's last key (keys come in byte order).
      start = Buffer.concat([res.kvs[res.kvs.length - 1].key, Buffer.from([0])]);
    }
  }

  private watch(fromRevision: bigint): void {
    const watcher = this.client.watch().prefix(this.prefix).startRevision(fromRevision.toString()).watcher();
    this.watcher = watcher;
    watcher.on('data', (res: IWatchResponse) => {
      if (this.watcher !== watcher || res.events.length === 0) return;
      for (const ev of res.events) {
        const key = this.relative(ev.kv.key);
        if (ev.type === 'Put') this.entries.set(key, ev.kv.value.toString('utf8'));
        else this.entries.delete(key);
      }
      this.revisionValue = BigInt(res.header.revision);
      this.emit('change');
    });
    const lost = (err: unknown): void => {
      if (this.watcher !== watcher || this.closed) return;
      this.dropWatcher();
      this.logger.warn({ prefix: this.prefix, err: etcdErrorText(err) }, 'etcd watch lost; serving the last known deployment (stale) until a resync');
      this.setStale(true);
      this.retry = setTimeout(() => void this.sync(), this.backoff.next());
    };
    watcher.on('disconnected', lost);
    watcher.on('error', lost);
  }

  private dropWatcher(): void {
    const w = this.watcher;
    this.watcher = undefined;
    // Cancelling a watcher the etcd3 manager is reconnecting may reject; it is gone either way.
    if (w) void w.cancel().catch(() => undefined);
  }

  private setStale(stale: boolean): void {
    if (this.staleValue === stale) return;
    this.staleValue = stale;
    this.emit('stale', stale);
  }

  private relative(key: Buffer): string {
    return key.toString('utf8').slice(this.prefix.length);
  }
}
