// RankStream interleavings that sockets make hard to force: replay overtaking live traffic,
// restarts during a replay, overflow, chunked draining and gaps found while draining.
import { RankStream, type ReplayHandle, type StreamLimits } from '../../src/ingest/stream';

const LIMITS: StreamLimits = { maxBufferedDuringReplay: 100, maxBufferedBytes: 1 << 20, messagesPerTurn: 100, restartConfirmations: 3, replayQueueMessages: 32 };

class Driver {
  readonly log: string[] = [];
  readonly replays: { from: bigint; handle: ReplayHandle; cancelled: boolean }[] = [];
  readonly later: (() => void)[] = [];
  replayEndpoint = true;
  readonly stream: RankStream;

  constructor(limits: Partial<StreamLimits> = {}) {
    this.stream = new RankStream(
      {
        deliver: (seq) => this.log.push(`d${seq}`),
        reset: (reason) => this.log.push(`reset:${reason}`),
        gap: () => this.log.push('gap'),
        overflow: () => this.log.push('overflow'),
        outOfOrder: (count) => this.log.push(`outOfOrder:${count}`),
        startReplay: (from) => {
          if (!this.replayEndpoint) return null;
          const entry = { from, cancelled: false, handle: { cancel: () => void (entry.cancelled = true) } };
          this.replays.push(entry);
          this.log.push(`replay:${from}`);
          return entry.handle;
        },
        later: (fn) => this.later.push(fn),
      },
      { ...LIMITS, ...limits },
    );
  }

  get replay(): ReplayHandle {
    return this.replays[this.replays.length - 1].handle;
  }

  live(...seqs: number[]): void {
    for (const s of seqs) this.stream.live(BigInt(s), Buffer.alloc(0));
  }

  /** Live messages with payloads of `bytes` bytes. */
  liveSized(bytes: number, ...seqs: number[]): void {
    for (const s of seqs) this.stream.live(BigInt(s), Buffer.alloc(bytes));
  }

  replayed(...seqs: number[]): void {
    for (const s of seqs) this.stream.replayed(this.replay, BigInt(s), Buffer.alloc(0));
  }

  runLater(): void {
    while (this.later.length > 0) this.later.shift()!();
  }
}

it('a replay that overtakes the live connection: late live copies are skipped, not a restart', () => {
  const d = new Driver();
  d.stream.connected();
  d.replayed(0, 1, 2);
  d.stream.replayEnded(d.replay, true);
  d.live(0, 1, 2, 3);
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'd2', 'd3']);
});

it('live messages held during a replay continue after it; covered ones are skipped', () => {
  const d = new Driver();
  d.stream.connected();
  d.live(2, 3, 4);
  d.replayed(0, 1, 2, 3);
  d.stream.replayEnded(d.replay, true);
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'd2', 'd3', 'd4']);
});

it('a round that filled the replay queue is followed by one from the next sequence (the ROUTER may have dropped its tail)', () => {
  const d = new Driver({ replayQueueMessages: 4 });
  d.stream.connected();
  d.live(9);
  d.replayed(0, 1, 2, 3, 4); // 5..8 dropped by the engine's ROUTER, then its end marker
  d.stream.replayEnded(d.replay, true);
  d.replayed(5, 6, 7, 8);
  d.stream.replayEnded(d.replay, true); // live 9 continues it: no third round
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'd2', 'd3', 'd4', 'replay:5', 'd5', 'd6', 'd7', 'd8', 'd9']);
  expect(d.replays).toHaveLength(2);
});

it('a round that filled the replay queue and then went silent (its end marker dropped too) is followed by another', () => {
  const d = new Driver({ replayQueueMessages: 4 });
  d.stream.connected();
  d.replayed(0, 1, 2, 3);
  d.stream.replayEnded(d.replay, false); // timed out
  expect(d.replays[0].cancelled).toBe(true);
  d.replayed(4, 5);
  d.stream.replayEnded(d.replay, false); // no progress worth another round: given up
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'd2', 'd3', 'replay:4', 'd4', 'd5']);
});

it('a full round followed by the live messages held behind it ends the replay (a publishing engine never loops through rounds)', () => {
  const d = new Driver({ replayQueueMessages: 4 });
  d.stream.connected();
  d.live(5, 6, 7);
  d.replayed(0, 1, 2, 3, 4, 5);
  d.stream.replayEnded(d.replay, true);
  expect(d.replays).toHaveLength(1);
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6', 'd7']);
});

it('a round under the replay queue bound ends the replay', () => {
  const d = new Driver({ replayQueueMessages: 4 });
  d.stream.connected();
  d.replayed(0, 1, 2);
  d.stream.replayEnded(d.replay, true);
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'd2']);
  expect(d.replays).toHaveLength(1);
});

it('a restart during a replay cancels it and replays the new engine from 0', () => {
  const d = new Driver();
  d.live(0, 1, 2);
  d.live(4); // gap → replay from 3
  const gapReplay = d.replays[0];
  d.live(0, 1); // backwards, not yet confirmed
  expect(gapReplay.cancelled).toBe(false);
  d.live(2); // the third in a row: the engine restarted
  expect(gapReplay.cancelled).toBe(true);
  d.replayed(0);
  d.stream.replayEnded(d.replay, true);
  d.live(3);
  expect(d.log).toEqual(['d0', 'd1', 'd2', 'gap', 'replay:3', 'reset:restart', 'replay:0', 'd0', 'd1', 'd2', 'd3']);
});

it('a single lower live message is dropped and counted; the stream goes on without a reset', () => {
  const d = new Driver();
  d.live(0, 1, 2, 3);
  d.live(0); // a stray (duplicate, second publisher): not a restart on its own
  d.live(4);
  expect(d.log).toEqual(['d0', 'd1', 'd2', 'd3', 'outOfOrder:1', 'd4']);
  expect(d.replays).toHaveLength(0);
});

it('a second publisher interleaving its own sequence never confirms a restart', () => {
  const d = new Driver();
  d.live(100, 0, 101, 1, 102, 2, 103);
  expect(d.log).toEqual(['d100', 'outOfOrder:1', 'd101', 'outOfOrder:1', 'd102', 'outOfOrder:1', 'd103']);
});

it('a restart is confirmed by contiguous messages even once they climb above the old sequence', () => {
  const d = new Driver();
  d.live(0, 1);
  d.live(0, 1, 2);
  expect(d.log).toEqual(['d0', 'd1', 'reset:restart', 'replay:0']);
  d.replayed(0, 1, 2);
  d.stream.replayEnded(d.replay, true);
  d.live(3);
  expect(d.log.slice(4)).toEqual(['d0', 'd1', 'd2', 'd3']);
});

it('too many held-back messages abandon the replay; the rest of the stream goes on', () => {
  const d = new Driver({ maxBufferedDuringReplay: 3, messagesPerTurn: 100 });
  d.stream.connected();
  d.live(5, 6, 7, 8);
  expect(d.replays[0].cancelled).toBe(true);
  d.replayed(0); // late reply to the abandoned replay: ignored
  // 0..4 were the engine's and are lost: a gap.
  expect(d.log).toEqual(['replay:0', 'gap', 'd5', 'd6', 'd7', 'd8']);
});

it('held-back bytes over the bound abandon the replay too', () => {
  const d = new Driver({ maxBufferedBytes: 250 });
  d.stream.connected();
  d.liveSized(100, 5, 6);
  expect(d.replays[0].cancelled).toBe(false);
  d.liveSized(100, 7); // 300 bytes held
  expect(d.replays[0].cancelled).toBe(true);
  expect(d.log).toEqual(['replay:0', 'gap', 'd5', 'd6', 'd7']);
});

it('a backlog behind a finished replay that outgrows its count bound is dropped, the source reset and replayed from 0', () => {
  const d = new Driver({ maxBufferedDuringReplay: 3, messagesPerTurn: 1 });
  d.stream.connected();
  d.live(0, 1, 2);
  d.stream.replayEnded(d.replay, true); // d0 now, 1 and 2 wait for later turns
  d.live(3); // 3 held
  d.live(4); // a 4th: overflow; the engine still has 0..4, so it replays them (4 held behind)
  expect(d.log).toEqual(['replay:0', 'd0', 'overflow', 'reset:overflow', 'replay:0']);
  expect(d.replays[1].from).toBe(0n);
  d.runLater(); // the dropped backlog's drain finds nothing
  d.replayed(0, 1, 2, 3);
  d.stream.replayEnded(d.replay, true);
  d.live(5);
  expect(d.log.slice(5)).toEqual(['d0', 'd1', 'd2', 'd3', 'd4', 'd5']);
});

it('a backlog that outgrows its byte bound is dropped and the source reset; without a replay endpoint it continues from the live message', () => {
  const d = new Driver({ maxBufferedBytes: 250, messagesPerTurn: 1 });
  d.stream.connected();
  d.liveSized(100, 0, 1);
  d.stream.replayEnded(d.replay, true); // d0; 100 bytes still held
  d.replayEndpoint = false;
  d.liveSized(100, 2); // 200 held
  d.liveSized(100, 3); // 300 would be held: overflow
  expect(d.log).toEqual(['replay:0', 'd0', 'overflow', 'reset:overflow', 'd3']);
  d.runLater();
  expect(d.log).toHaveLength(5);
});

it('batches lost after delivery (overflowed): the source is reset and replayed from 0, live messages held behind the replay', () => {
  const d = new Driver();
  d.stream.connected();
  d.replayed(0, 1);
  d.stream.replayEnded(d.replay, true);
  d.live(2, 3);
  d.stream.overflowed();
  d.live(4);
  d.replayed(0, 1, 2, 3);
  d.stream.replayEnded(d.replay, true);
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'd2', 'd3', 'reset:overflow', 'replay:0', 'd0', 'd1', 'd2', 'd3', 'd4']);
});

it('drains held-back messages a chunk per turn, newer live messages queue behind them', () => {
  const d = new Driver({ maxBufferedDuringReplay: 100, messagesPerTurn: 2 });
  d.stream.connected();
  d.live(0, 1, 2, 3, 4);
  d.stream.replayEnded(d.replay, true);
  expect(d.log).toEqual(['replay:0', 'd0', 'd1']);
  d.live(5);
  expect(d.log).toEqual(['replay:0', 'd0', 'd1']);
  d.runLater();
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'd2', 'd3', 'd4', 'd5']);
  d.live(6);
  expect(d.log.at(-1)).toBe('d6');
});

it('a gap in live traffic queued behind a drain starts a replay; the rest waits for it', () => {
  const d = new Driver({ maxBufferedDuringReplay: 100, messagesPerTurn: 1 });
  d.stream.connected();
  d.live(0, 1);
  d.stream.replayEnded(d.replay, true);
  d.live(5, 6); // arrive while 1 is still held back
  d.runLater();
  expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'gap', 'replay:2']);
  d.replayed(2, 3, 4);
  d.stream.replayEnded(d.replay, true);
  d.runLater();
  expect(d.log.slice(5)).toEqual(['d2', 'd3', 'd4', 'd5', 'd6']);
});

it('a hole inside the replies (the ROUTER dropped some) is asked for again from there', () => {
  const d = new Driver();
  d.live(0, 6);
  const first = d.replays[0];
  d.replayed(1, 2, 4); // 3 was dropped by the engine's ROUTER
  expect(first.cancelled).toBe(true);
  d.replayed(3, 4, 5);
  d.stream.replayEnded(d.replay, true);
  expect(d.log).toEqual(['d0', 'gap', 'replay:1', 'd1', 'd2', 'replay:3', 'd3', 'd4', 'd5', 'd6']);
});

it('a gap replay that starts past the gap resets and continues from what it has', () => {
  const d = new Driver();
  d.live(0, 1, 4);
  d.replayed(3, 4);
  d.stream.replayEnded(d.replay, true);
  expect(d.log).toEqual(['d0', 'd1', 'gap', 'replay:2', 'reset:gap', 'd3', 'd4']);
});

it('a failed gap replay resets once and counts the gap once', () => {
  const d = new Driver();
  d.live(0, 3, 4);
  d.stream.replayEnded(d.replay, false);
  expect(d.log).toEqual(['d0', 'gap', 'replay:1', 'reset:gap', 'd3', 'd4']);
  expect(d.replays[0].cancelled).toBe(true);
});

it('without replay: gaps reset, restarts reset, first messages start the stream', () => {
  const d = new Driver();
  d.replayEndpoint = false;
  d.stream.connected();
  d.live(7, 8, 10, 2, 3, 4);
  expect(d.log).toEqual(['d7', 'd8', 'gap', 'reset:gap', 'd10', 'reset:restart', 'd2', 'd3', 'd4']);
});

it('a disconnect resets only if something was delivered and drops what was held back', () => {
  const d = new Driver({ maxBufferedDuringReplay: 100, messagesPerTurn: 1 });
  d.stream.connected();
  d.stream.disconnected();
  expect(d.log).toEqual(['replay:0']);
  d.stream.connected();
  d.live(0, 1, 2);
  d.stream.replayEnded(d.replay, true);
  d.stream.disconnected();
  d.runLater();
  expect(d.log).toEqual(['replay:0', 'replay:0', 'd0', 'reset:disconnect']);
});

it('after close nothing is delivered', () => {
  const d = new Driver();
  d.live(0);
  d.stream.close();
  d.live(1);
  d.stream.connected();
  expect(d.log).toEqual(['d0']);
});

describe('a replay that recovers nothing and ends unfinished', () => {
  it('a first replay that times out: the first live message past its start is a gap (the engine had history the sink never sees)', () => {
    const d = new Driver();
    d.stream.connected();
    d.live(5, 6);
    d.stream.replayEnded(d.replay, false);
    expect(d.log).toEqual(['replay:0', 'gap', 'd5', 'd6']);
  });

  it('a first replay that times out before any live message: the gap is counted when one arrives', () => {
    const d = new Driver();
    d.stream.connected();
    d.stream.replayEnded(d.replay, false);
    d.live(3, 4);
    expect(d.log).toEqual(['replay:0', 'gap', 'd3', 'd4']);
  });

  it('a first replay that times out on an engine that had published nothing: no gap (its first message is 0)', () => {
    const d = new Driver();
    d.stream.connected();
    d.stream.replayEnded(d.replay, false);
    d.live(0, 1);
    expect(d.log).toEqual(['replay:0', 'd0', 'd1']);
  });

  it('a refill after an overflow whose replay times out: the history it could not refill is a gap', () => {
    const d = new Driver();
    d.stream.connected();
    d.replayed(0, 1);
    d.stream.replayEnded(d.replay, true);
    d.stream.overflowed();
    d.live(2);
    d.stream.replayEnded(d.replay, false);
    expect(d.log).toEqual(['replay:0', 'd0', 'd1', 'reset:overflow', 'replay:0', 'gap', 'd2']);
  });

  it('a complete first replay that had nothing to send: no gap', () => {
    const d = new Driver();
    d.stream.connected();
    d.stream.replayEnded(d.replay, true);
    d.live(4, 5);
    expect(d.log).toEqual(['replay:0', 'd4', 'd5']);
  });
});
