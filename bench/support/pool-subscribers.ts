// SubscribeKvPool subscribers on a relay process's pool, as consumers attach in production: grpc-js
// clients (the relay's own channel options aside, as bench/delta-latency's), each waiting for its
// snapshot, then decoding every FilterUpdate envelope and counting the deltas (issue 30 item 2
// with a subscriber attached: what the publication path costs the relay per engine message).
import type * as grpc from '@grpc/grpc-js';
import { snapshotChunkCount } from '../../src/native';
import { RELAY_CONTRACT_MARKER } from '../../src/wire/constants';
import { decodeMessage } from '../../src/wire/codec';
import { FilterUpdateKind } from '../../src/wire/enums';
import type { KvEventRelayClient } from '../../src/wire/service';
import { rawClients } from './bare-grpc';
import { catalogProducers } from './relay-process';

export interface PoolSubscribers {
  /** Deltas the subscribers received so far, all of them together. */
  deltas(): number;
  /** Why a stream failed after its snapshot, if one did (a bench's result is then not one with n subscribers). */
  failed(): string | undefined;
  close(): void;
}

/** `n` subscribers of the pool named `model` on the relay at `address`; resolves once each has its snapshot. */
export async function subscribePool(address: string, model: string, n: number): Promise<PoolSubscribers> {
  const producer = (await catalogProducers(address, 1)).get(model);
  if (!producer) throw new Error(`the relay's catalog has no pool ${model}`);
  const chunks = snapshotChunkCount({ seed: producer.ckfFormat!.seed, bucketCount: Number(producer.ckfFormat!.bucketCount) });
  const clients = rawClients(address, n);
  const calls: grpc.ClientReadableStream<Buffer>[] = [];
  let deltas = 0;
  let failed: string | undefined;
  let closing = false;
  const close = (): void => {
    closing = true;
    for (const call of calls) call.cancel();
    for (const client of clients) client.close();
  };
  try {
    await Promise.all(
      clients.map(
        (client, i) =>
          new Promise<void>((resolve, reject) => {
            const call = (client as unknown as KvEventRelayClient).subscribeKvPool({
              subscriberId: `bench-message-cost-${i}`,
              contractMarker: RELAY_CONTRACT_MARKER,
              expectedProducer: producer,
            }) as unknown as grpc.ClientReadableStream<Buffer>;
            calls.push(call);
            let snapshot = 0;
            call.on('data', (bytes: Buffer) => {
              const update = decodeMessage('FilterUpdate', bytes);
              if (update.kind === FilterUpdateKind.SNAPSHOT_CHUNK && ++snapshot === chunks) resolve();
              if (update.kind === FilterUpdateKind.DELTA) deltas += 1;
            });
            call.on('error', (err) => {
              if (!closing) failed ??= err.message;
              reject(err);
            });
          }),
      ),
    );
  } catch (err) {
    close();
    throw err;
  }
  return { deltas: () => deltas, failed: () => failed, close };
}
