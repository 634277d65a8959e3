// Publishers sending their sources' messages at a fixed total rate, round robin over the sources, as
// engines publish a small batch per scheduler step (issue 30 item 2's low and mid rates).
import type { Publisher } from 'zeromq';
import { encodeSequence } from '../../src/ingest/frames';
import { TOPIC, type Sender } from './firehose';

/** How often the sender wakes to send what fell due (a finer tick costs the bench's own CPU). */
const TICK_MS = 5;

export class PacedSender implements Sender {
  private timer: NodeJS.Timeout | undefined;
  private sent = 0;
  private startedAt = 0;
  private readonly sequences: bigint[];
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly sockets: Publisher[],
    private readonly payloads: Buffer[][],
    private readonly messagesPerSecond: number,
  ) {
    this.sequences = sockets.map(() => 0n);
  }

  start(): void {
    this.startedAt = performance.now();
    this.timer = setInterval(() => {
      this.sending = this.sending.then(() => this.sendDue());
    }, TICK_MS);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sending;
  }

  private async sendDue(): Promise<void> {
    const due = Math.floor(((performance.now() - this.startedAt) / 1000) * this.messagesPerSecond);
    for (; this.sent < due; this.sent++) {
      const s = this.sent % this.sockets.length;
      const seq = this.sequences[s]++;
      const payloads = this.payloads[s];
      await this.sockets[s].send([TOPIC, encodeSequence(seq), payloads[Number(seq % BigInt(payloads.length))]]);
    }
  }
}
