// Registering an engine worker in etcd (the `register` command, or an engine sidecar in-process):
// its worker entry under a lease that this process keeps alive. While the process lives the worker
// is part of the deployment; when it dies the lease expires and etcd deletes the entry, which is the
// relay's signal to drop the worker (its sources are reset and its blocks removed). A lease lost
// while etcd was unreachable is replaced and the entry written again once etcd answers.
import { EventEmitter } from 'events';
import type { Etcd3, Lease } from 'etcd3';
import { DEFAULT_ETCD_LEASE_TTL_S, ETCD_RETRY_INITIAL_MS, ETCD_RETRY_MAX_MS } from '../config/defaults';
import { issuesToError } from '../config/load';
import { workerSchema } from '../config/schema';
import { Backoff } from '../client/backoff';
import { silentLogger, type Logger } from '../log';
import { createEtcdClient, etcdErrorText, type EtcdConnection } from './etcd-client';
import { normalizePrefix, workerKey, type EndpointTriple } from './keys';

export interface WorkerRegistrationOptions {
  etcd: EtcdConnection;
  /** The relay's `discovery.etcd.prefix`. */
  prefix: string;
  endpoint: EndpointTriple;
  /** The worker entry, exactly as a config file `workers` entry (validated here before it is written). */
  worker: unknown;
  ttlSeconds?: number;
  logger?: Logger;
}

export interface WorkerRegistrationEvents {
  /** The entry was written under lease `leaseId` (again after a loss). */
  registered: [leaseId: string];
  /** The lease was lost; the entry is gone until it is registered again. */
  lost: [];
}

export class WorkerRegistration extends EventEmitter<WorkerRegistrationEvents> {
  readonly key: string;
  private readonly client: Etcd3;
  private readonly value: string;
  private readonly ttlSeconds: number;
  private readonly logger: Logger;
  private readonly backoff = new Backoff({ initialMs: ETCD_RETRY_INITIAL_MS, maxMs: ETCD_RETRY_MAX_MS });
  private lease: Lease | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  /** Throws a ConfigError (naming the field) when `worker` is not a valid worker entry. */
  constructor(options: WorkerRegistrationOptions) {
    super();
    const parsed = workerSchema.safeParse(options.worker, { reportInput: true });
    if (!parsed.success) throw issuesToError('worker', parsed.error.issues, workerSchema);
    this.key = workerKey(normalizePrefix(options.prefix), options.endpoint, parsed.data.id);
    this.value = JSON.stringify(options.worker);
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_ETCD_LEASE_TTL_S;
    this.logger = options.logger ?? silentLogger;
    this.client = createEtcdClient(options.etcd);
  }

  /** Resolves once the entry is first written (retrying with backoff until etcd answers). */
  start(): Promise<string> {
    const first = new Promise<string>((resolve) => this.once('registered', resolve));
    void this.register();
    return first;
  }

  /**
   * Stops keeping the entry alive. `revoke` (default) deletes it now; without it the entry stays
   * until its lease expires, as when the worker's process dies.
   */
  async close(options: { revoke?: boolean } = {}): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const lease = this.lease;
    this.lease = undefined;
    if (lease && options.revoke !== false) await lease.revoke().catch((err: unknown) => this.logger.warn({ err: etcdErrorText(err) }, 'revoking the worker lease failed; it expires on its own'));
    else lease?.release();
    this.client.close();
  }

  private async register(): Promise<void> {
    this.retry = undefined;
    if (this.closed) return;
    const lease = this.client.lease(this.ttlSeconds);
    this.lease = lease;
    let registered = false;
    lease.on('lost', (err: unknown) => {
      if (this.lease !== lease || !registered) return;
      this.logger.error({ key: this.key, err: etcdErrorText(err) }, 'worker lease lost; registering again');
      this.emit('lost');
      this.again(lease);
    });
    try {
      const id = await lease.grant();
      await lease.put(this.key).value(this.value);
      if (this.lease !== lease || this.closed) return;
      registered = true;
      this.backoff.reset();
      this.logger.info({ key: this.key, lease: id, ttlSeconds: this.ttlSeconds }, 'worker registered');
      this.emit('registered', id);
    } catch (err) {
      if (this.lease !== lease || this.closed) return;
      this.logger.error({ key: this.key, err: etcdErrorText(err) }, 'cannot register the worker in etcd; retrying');
      this.again(lease);
    }
  }

  private again(lease: Lease): void {
    lease.release();
    this.lease = undefined;
    this.retry = setTimeout(() => void this.register(), this.backoff.next());
  }
}

/** Registers a worker and resolves once its entry is written. */
export async function registerWorker(options: WorkerRegistrationOptions): Promise<WorkerRegistration> {
  const registration = new WorkerRegistration(options);
  await registration.start();
  return registration;
}
