// The relay shards' addresses from their entries in etcd ({prefix}shards/{shardId} → {address, ...},
// each under its shard's lease), for a ShardedRelayClient: a shard that starts is added, one whose
// lease ends is dropped. A malformed entry is skipped.
import type { Etcd3 } from 'etcd3';
import type { ShardAddressSource } from '../client/shards';
import { silentLogger, type Logger } from '../log';
import { createEtcdClient, type EtcdConnection } from './etcd-client';
import { normalizePrefix } from './keys';
import { PrefixMirror } from './mirror';

export class EtcdShardAddresses implements ShardAddressSource {
  private readonly client: Etcd3;
  private readonly mirror: PrefixMirror;

  constructor(connection: EtcdConnection, prefix: string, logger: Logger = silentLogger) {
    this.client = createEtcdClient(connection);
    this.mirror = new PrefixMirror(this.client, `${normalizePrefix(prefix)}shards/`, logger);
  }

  start(onChange: (addresses: string[]) => void): void {
    this.mirror.on('change', () => onChange(shardAddresses(this.mirror.entries)));
    void this.mirror.start();
  }

  close(): void {
    this.mirror.close();
    this.client.close();
  }
}

export function shardAddresses(entries: ReadonlyMap<string, string>): string[] {
  const out = new Set<string>();
  for (const value of entries.values()) {
    try {
      const address = (JSON.parse(value) as { address?: unknown }).address;
      if (typeof address === 'string' && address.length > 0) out.add(address);
    } catch {
      // not a shard entry of ours
    }
  }
  return [...out].sort();
}
