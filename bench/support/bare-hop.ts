// The two hops a relay sits in, with no work between them: a process with a bare zeromq.js SUB per
// publisher that writes, for every message, one FilterUpdate of a given size to each open
// SubscribeKvPool call of a bare grpc-js server. The payload's first 12 bytes name the message
// (source u32, ZMQ sequence u64), so the sender can time it.
//   node bare-hop.js FRAME_BYTES ENDPOINT...     (logs {"address":"HOST:PORT"} on stderr when ready)
import * as grpc from '@grpc/grpc-js';
import { Subscriber } from 'zeromq';
import { INGEST_RECEIVE_HWM } from '../../src/config/defaults';
import { filterUpdateMessage } from '../../src/publication/frames';
import { FilterUpdateKind } from '../../src/wire/enums';
import { testProducer } from '../../test/support/test-source';
import { startBareServer } from './bare-grpc';

const RELAY = { drtInstanceId: 1n, relayIncarnation: 2n };
export const BARE_HOP_ID_BYTES = 12;

async function main(frameBytes: number, endpoints: string[]): Promise<void> {
  const producer = testProducer();
  const calls = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  const server = await startBareServer((call) => {
    calls.add(call);
    call.on('cancelled', () => calls.delete(call));
  });
  endpoints.forEach((endpoint, source) => {
    const sub = new Subscriber({ linger: 0, receiveHighWaterMark: INGEST_RECEIVE_HWM });
    sub.subscribe('');
    sub.connect(endpoint);
    void (async () => {
      for await (const [, seq] of sub) {
        const payload = Buffer.alloc(Math.max(frameBytes, BARE_HOP_ID_BYTES));
        payload.writeUInt32BE(source, 0);
        seq.copy(payload, 4, 0, 8);
        const sequence = seq.readBigUInt64BE(0);
        const bytes = filterUpdateMessage(RELAY, producer, sequence, sequence + 1n, FilterUpdateKind.DELTA, payload);
        for (const call of calls) call.write(bytes);
      }
    })();
  });
  process.stderr.write(`${JSON.stringify({ address: server.address })}\n`);
}

if (require.main === module) {
  const [frameBytes, ...endpoints] = process.argv.slice(2);
  main(Number(frameBytes), endpoints).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
