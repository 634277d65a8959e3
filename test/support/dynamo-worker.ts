// A simulated Dynamo worker process: what it writes to etcd (its instance, its model card and LoRA
// adapter cards, its ZMQ event channel, all under its own lease, whose id is its instance id and the
// worker_id of its events) and the KV events it publishes, per dp rank, on the event plane it uses
// (dynamo-event-plane-and-discovery.md §2-§6): NATS core envelopes, a JetStream stream of bare JSON
// events (enable_local_indexer false), or ZMQ event-plane frames; and, as the newest revisions' KV
// publishers do, a v1/event_sources entry per dp rank when asked (advertiseSource). tokens_hash is computed as Dynamo's
// worker does (XXH3-64 of the block's LE u32 tokens, seed 1337 or the LoRA salt); block_hash is an
// engine id of the test's choosing.
import type { Etcd3, Lease } from 'etcd3';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Publisher } from 'zeromq';
import { kvStreamName } from '../../src/dynamo/discovery/project';
import { xxh3 } from '../../src/native';
import { activeLoadMsgpack, envelopeMsgpack, randomPublisherId, routerEventJson, routerEventMsgpack, u64be, zmqFrame, type EventData } from './dynamo-wire';
import { loraSeed } from '../e2e/harness';

export type Transport = 'nats' | 'jetstream' | 'zmq';

export interface DynamoWorkerOptions {
  namespace: string;
  component: string;
  endpoint?: string;
  /** card_json fields (display_name, kv_cache_block_size, worker_type, needs, runtime_config...). */
  card: Record<string, unknown>;
  /** LoRA adapter cards: served name and runtime adapter name. */
  adapters?: { servedModel: string; loraName: string }[];
  transport: Transport;
  nats?: NatsConnection;
  ttlSeconds?: number;
  /** The ZMQ channel's scope: component (0.9-1.3) or endpoint (the newest KV publishers, EventPublisher::for_endpoint_id). */
  channelScope?: 'component' | 'endpoint';
}

/** JSON with u64 fields written exactly (JSON.stringify has no bigint). */
function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(/"@@(\d+)@@"/g, '$1');
}

export interface EventSourceOptions {
  /** With a recovery_target (Dynamo's ActiveRecoverable). */
  recoverable?: boolean;
  /** Changes the value before it is written (a case that contradicts its key). */
  edit?: (value: { metadata: Record<string, unknown> } & Record<string, unknown>) => void;
}

/**
 * A v1/event_sources entry as a worker's KV publisher writes it (identity-topology-load.md §5.2): the
 * key from its KV-state endpoint's scope, the topic and its publisher id in hex; the value serde's
 * DiscoveryInstance::EventSource with KvEventSource metadata (u64s exact).
 */
export function eventSourceEntry(ep: { namespace: string; component: string; endpoint: string }, workerId: bigint, dpRank: number, publisherId: bigint, o: EventSourceOptions = {}): [string, string] {
  const endpoint = { namespace: ep.namespace, component: ep.component, name: ep.endpoint };
  const value = {
    type: 'EventSource',
    scope: { kind: 'endpoint', endpoint },
    topic: 'kv-events',
    publisher_id: publisherId,
    metadata: {
      kv_state_endpoint: endpoint,
      worker: { worker_id: workerId, dp_rank: dpRank },
      publisher_id: publisherId,
      ...(o.recoverable ? { recovery_target: { namespace: ep.namespace, component: ep.component, endpoint: ep.endpoint, instance_id: workerId, transport: { tcp: '127.0.0.1:40001' } } } : {}),
    } as Record<string, unknown>,
  };
  o.edit?.(value);
  return [`v1/event_sources/namespace/${ep.namespace}/component/${ep.component}/endpoint/${ep.endpoint}/topic/kv-events/${publisherId.toString(16)}`, json(value)];
}

export class DynamoWorker {
  private lease: Lease | undefined;
  id = 0n;
  private readonly sequences = new Map<number, { publisherId: bigint; next: bigint }>();
  private zmq: Publisher | undefined;
  private zmqPublisher = randomPublisherId();
  /** Its kv_metrics publisher on the ZMQ plane (a channel of its own, as Dynamo's). */
  private loadZmq: Publisher | undefined;
  private loadPublisher = randomPublisherId();
  private eventId = 0n;

  constructor(
    private readonly kv: Etcd3,
    readonly o: DynamoWorkerOptions,
  ) {}

  get endpointPath(): string {
    return `${this.o.namespace}/${this.o.component}/${this.o.endpoint ?? 'generate'}`;
  }

  /** Grants the lease and writes the worker's keys, as a Dynamo worker does at start. */
  async register(): Promise<this> {
    const lease = this.kv.lease(this.o.ttlSeconds ?? 10, { autoKeepAlive: true });
    this.lease = lease;
    this.id = BigInt(await lease.grant());
    const hex = this.id.toString(16);
    const base = { namespace: this.o.namespace, component: this.o.component, endpoint: this.o.endpoint ?? 'generate', instance_id: this.id };
    if (this.o.transport === 'zmq') {
      this.zmq = new Publisher();
      await this.zmq.bind('tcp://127.0.0.1:*');
      this.loadZmq = new Publisher();
      await this.loadZmq.bind('tcp://127.0.0.1:*');
      const byEndpoint = this.o.channelScope === 'endpoint';
      const scope = `namespace/${this.o.namespace}/component/${this.o.component}${byEndpoint ? `/endpoint/${base.endpoint}` : ''}`;
      const channels: [string, bigint, Publisher][] = [
        ['kv-events', this.zmqPublisher, this.zmq],
        ['kv_metrics', this.loadPublisher, this.loadZmq],
      ];
      for (const [topic, publisherId, socket] of channels) {
        await lease.put(`v1/event_channels/${scope}/topic/${topic}/${publisherId.toString(16)}`).value(
          json({
            type: 'EventChannel',
            scope: byEndpoint
              ? { kind: 'endpoint', endpoint: { namespace: this.o.namespace, component: this.o.component, name: base.endpoint } }
              : { kind: 'component', namespace: this.o.namespace, component: this.o.component },
            topic,
            instance_id: publisherId,
            transport: { kind: 'Zmq', config: { endpoint: socket.lastEndpoint } },
          }),
        );
      }
    }
    if (this.o.transport === 'jetstream') {
      // The publisher creates its stream if missing (NatsQueue: subjects {stream}.*, max_age 10 min).
      const jsm = await jetstreamManager(this.o.nats!);
      const name = kvStreamName(this.o);
      await jsm.streams.add({ name, subjects: [`${name}.*`], max_age: 600 * 1e9 }).catch(() => undefined);
    }
    const card = { ...this.o.card, runtime_config: { enable_local_indexer: this.o.transport !== 'jetstream', ...(this.o.card.runtime_config as object) } };
    await lease.put(`v1/instances/${this.endpointPath}/${hex}`).value(json({ type: 'Endpoint', component: base.component, endpoint: base.endpoint, namespace: base.namespace, instance_id: this.id, transport: { tcp: '127.0.0.1:40001' } }));
    await lease.put(`v1/mdc/${this.endpointPath}/${hex}`).value(json({ type: 'Model', ...base, card_json: card }));
    for (const a of this.o.adapters ?? []) {
      const suffix = a.servedModel.toLowerCase().replace(/[^a-z0-9_]/g, '_');
      await lease.put(`v1/mdc/${this.endpointPath}/${hex}/${suffix}`).value(
        json({ type: 'Model', ...base, card_json: { ...card, display_name: a.servedModel, lora: { name: a.loraName } }, model_suffix: suffix }),
      );
    }
    return this;
  }

  /** The block hashes (tokens_hash) Dynamo's worker computes for complete blocks of `tokens`. */
  static tokensHashes(tokens: readonly number[], blockSize: number, lora?: string): bigint[] {
    const out: bigint[] = [];
    for (let start = 0; start + blockSize <= tokens.length; start += blockSize) {
      const bytes = Buffer.alloc(4 * blockSize);
      for (let i = 0; i < blockSize; i++) bytes.writeUInt32LE(tokens[start + i], 4 * i);
      out.push(xxh3(bytes, loraSeed(lora)));
    }
    return out;
  }

  /** A store of `tokens` (complete blocks) with engine ids `ids`, chained to engine id `parent`. */
  async store(ids: bigint[], tokens: readonly number[], blockSize: number, o: { parent?: bigint; dpRank?: number; lora?: string } = {}): Promise<void> {
    const hashes = DynamoWorker.tokensHashes(tokens, blockSize, o.lora);
    await this.publish({ stored: { parentHash: o.parent ?? null, blocks: ids.map((blockHash, i) => ({ blockHash, tokensHash: hashes[i] })) } }, o.dpRank ?? 0);
  }

  async remove(ids: bigint[], dpRank = 0): Promise<void> {
    await this.publish({ removed: { blockHashes: ids } }, dpRank);
  }

  async clear(dpRank = 0): Promise<void> {
    await this.publish('cleared', dpRank);
  }

  /** One RouterEvent on the worker's event plane; `skip` publisher sequences first (a loss). */
  async publish(data: EventData, dpRank: number, o: { skip?: number; sequence?: bigint } = {}): Promise<void> {
    const event = { workerId: this.id, storageTier: 'device' as const, residencyDomain: 'worker' as const, eventId: this.eventId++, dpRank, data };
    if (this.o.transport === 'jetstream') {
      await jetstream(this.o.nats!).publish(`${kvStreamName(this.o)}.kv-events`, routerEventJson(event));
      return;
    }
    const pub = this.publisherOf(dpRank);
    pub.next += BigInt(o.skip ?? 0);
    const sequence = o.sequence ?? pub.next++;
    const envelope = envelopeMsgpack({ publisherId: pub.publisherId, sequence, publishedAt: BigInt(Date.now()), topic: 'kv-events', payload: routerEventMsgpack(event) });
    if (this.o.transport === 'zmq') {
      await this.zmq!.send([Buffer.from('kv-events'), u64be(pub.publisherId), u64be(sequence), zmqFrame(envelope)]);
      return;
    }
    this.o.nats!.publish(`namespace.${this.o.namespace}.component.${this.o.component}.kv-events`, envelope);
    await this.o.nats!.flush();
  }

  /**
   * One KvEventPublisher (its own publisher id and sequence from 0) per dp rank. On ZMQ the ranks share
   * the worker's one PUB, advertised under its first rank's publisher id.
   */
  private publisherOf(dpRank: number): { publisherId: bigint; next: bigint } {
    let pub = this.sequences.get(dpRank);
    if (!pub) {
      pub = { publisherId: this.o.transport === 'zmq' && this.sequences.size === 0 ? this.zmqPublisher : randomPublisherId(), next: 0n };
      this.sequences.set(dpRank, pub);
    }
    return pub;
  }

  /**
   * The v1/event_sources entry of its KV publisher for `dpRank`, under its lease; the key. `publisherId`:
   * another publisher than the rank's own (a second incarnation). `kvStateEndpoint`: the endpoint (of its
   * component) the entry is scoped to, when its card's runtime_config.kv_state_endpoint names one.
   */
  async advertiseSource(dpRank: number, o: { publisherId?: bigint; kvStateEndpoint?: string } & EventSourceOptions = {}): Promise<string> {
    const endpoint = o.kvStateEndpoint ?? this.o.endpoint ?? 'generate';
    const [key, value] = eventSourceEntry({ namespace: this.o.namespace, component: this.o.component, endpoint }, this.id, dpRank, o.publisherId ?? this.publisherOf(dpRank).publisherId, o);
    await this.lease!.put(key).value(value);
    return key;
  }

  /** The worker's ActiveLoad (its kv_used_blocks on a rank) on its endpoint's kv_metrics subject. */
  async reportLoad(kvUsedBlocks: number, dpRank = 0): Promise<void> {
    const payload = activeLoadMsgpack({ workerId: this.id, dpRank, kvUsedBlocks });
    const sequence = this.loadSequence++;
    const envelope = envelopeMsgpack({ publisherId: this.loadPublisher, sequence, publishedAt: BigInt(Date.now()), topic: 'kv_metrics', payload });
    if (this.loadZmq) {
      await this.loadZmq.send([Buffer.from('kv_metrics'), u64be(this.loadPublisher), u64be(sequence), zmqFrame(envelope)]);
      return;
    }
    this.o.nats!.publish(`namespace.${this.o.namespace}.component.${this.o.component}.endpoint.${this.o.endpoint ?? 'generate'}.kv_metrics`, envelope);
    await this.o.nats!.flush();
  }
  private loadSequence = 0n;

  /** The raw envelope bytes of the last publish can be re-sent to test duplicates: re-publish at `sequence`. */
  async republish(data: EventData, dpRank: number, sequence: bigint): Promise<void> {
    await this.publish(data, dpRank, { sequence });
  }

  /** The process dies: its lease is no longer kept alive and expires after its TTL. */
  async crash(): Promise<void> {
    this.lease?.release();
    this.lease = undefined;
    this.zmq?.close();
    this.loadZmq?.close();
  }

  async close(): Promise<void> {
    await this.lease?.revoke().catch(() => undefined);
    this.lease = undefined;
    this.zmq?.close();
    this.loadZmq?.close();
  }
}
