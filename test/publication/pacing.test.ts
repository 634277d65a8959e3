// The pacing policy's pure parts (publication/pacing.ts): a queue's state from its fill and its
// growth since the last judgement, and the pool's next stretch from the neediest state.
import { PACING_MAX_STRETCH, PACING_STRETCH_OCCUPANCY } from '../../src/config/defaults';
import { nextStretch, QueueState, queueState } from '../../src/publication/pacing';

test('a queue below the stretch occupancy is low, whether it grew or not', () => {
  expect(queueState(0, 0, 0)).toBe(QueueState.Low);
  expect(queueState(PACING_STRETCH_OCCUPANCY / 2, 1, 0)).toBe(QueueState.Low);
  expect(queueState(PACING_STRETCH_OCCUPANCY / 2, 1, 3)).toBe(QueueState.Low);
});

test('a queue at or above it is filling while it holds more frames than at the last judgement, draining while it holds as many or fewer', () => {
  expect(queueState(PACING_STRETCH_OCCUPANCY, 2, 1)).toBe(QueueState.Filling);
  expect(queueState(1, 16, 15)).toBe(QueueState.Filling);
  expect(queueState(PACING_STRETCH_OCCUPANCY, 2, 2)).toBe(QueueState.Draining);
  expect(queueState(0.5, 8, 12)).toBe(QueueState.Draining);
  // One large delta in flight passes the occupancy by its bytes alone: a stopped reader's grows.
  expect(queueState(0.3, 1, 1)).toBe(QueueState.Draining);
  expect(queueState(0.6, 2, 1)).toBe(QueueState.Filling);
});

test('the stretch doubles while a queue fills, up to the maximum; holds while one drains; returns to 1 at once when all stand low', () => {
  expect(nextStretch(1, QueueState.Filling)).toBe(2);
  expect(nextStretch(64, QueueState.Filling)).toBe(128);
  expect(nextStretch(PACING_MAX_STRETCH, QueueState.Filling)).toBe(PACING_MAX_STRETCH);
  expect(nextStretch(1, QueueState.Draining)).toBe(1);
  expect(nextStretch(256, QueueState.Draining)).toBe(256);
  expect(nextStretch(256, QueueState.Low)).toBe(1);
  expect(nextStretch(1, QueueState.Low)).toBe(1);
});

test('a reader stopped for a second keeps its stream: from 2 queued frames, doubling per delta reaches a 1 s slice within the default 16 frames', () => {
  // Each judgement comes with one delta (one more queued frame) while the reader takes nothing.
  let stretch = 1;
  let frames = 2; // the first judgement that sees a filling queue
  let elapsedMs = 0;
  while (elapsedMs < 1_000) {
    stretch = nextStretch(stretch, queueState(frames / 16, frames, frames - 1));
    elapsedMs += Math.min(stretch, 1_000);
    frames += 1;
  }
  expect(frames).toBeLessThanOrEqual(16);
});
