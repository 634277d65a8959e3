// Adaptive publication pacing (issue #8 item 5). The producer decides when a delta is cut, so a
// hub whose subscribers' queues fill asks for longer slices: fewer, larger deltas of absolute
// bucket images, which cost a stopped reader far fewer queue slots for the same changes. The request
// is a stretch factor of the configured slice (threshold events and delay). At each judgement
// (hub.ts: once per loop turn with a delta) every subscriber's queue is in one of three states
// (queueState):
// - filling: at least PACING_STRETCH_OCCUPANCY full and holding more frames than at the last
//   judgement (its reader took fewer than it was handed since: it stopped, a GC, a snapshot
//   install): the stretch doubles, so a 1 s pause fits in the queue;
// - draining: as full, but no fuller than at the last judgement (it reads again, at least at the
//   pool's pace): the stretch holds. Such a reader needs no longer slices to catch up, and doubling
//   while it drained (a large delta in flight alone passes the occupancy by its bytes) had a reader
//   that was only briefly late (a process descheduled on shared cores) stretch the slice to
//   hundreds of ms, every delta then that late (bench delta-latency, BENCHMARKS.md 2026-12-07);
// - low: below PACING_STRETCH_OCCUPANCY: nothing to save.
// The pool's stretch doubles if any queue is filling, holds if any is draining, and returns to 1
// at once when every queue stands low (it used to halve once per delta and only when every queue
// was empty, which a delta still in flight kept from happening for seconds). A reader that truly
// stopped still fills its bounded queue and lags.
//
// Longer slices delay every subscriber of the pool (issue #9: fast subscribers must not wait for
// slow ones), so a subscriber may ask for them only while pacing can still save it (PoolSubscriber):
// a live one for PACING_PAUSE_BUDGET_MS after its queue last stood low, one taking its snapshot
// while the chunk in flight moves at a plausible link rate. Never-readers and readers that keep
// up with less than the pool's rate are then cut off at the configured pace, and the slice returns
// to the configured one for the others.
//
// Why not stretch per subscriber instead (merge a filling queue's deltas into one delta from its
// last delivered sequence to the head)? Consumers reject it: a delta must have sequence ==
// base_sequence + 1 (consumer.md, DELTA; hashing-ckf-cbi1.md §4 NonContiguousSequence; our replica
// too), and renumbering per subscriber would give one sequence different images on different
// streams. The pool has one sequence, so the slice is the pool's; what is per subscriber is
// whether it may stretch it, and for how long.
import {
  PACING_MAX_STRETCH,
  PACING_SNAPSHOT_LATENCY_MS,
  PACING_SNAPSHOT_MIN_BYTES_PER_S,
  PACING_STRETCH_OCCUPANCY,
} from '../config/defaults';

/** A subscriber queue at a judgement, in increasing order of what it asks of the pool's slice. */
export enum QueueState {
  Low = 0,
  Draining = 1,
  Filling = 2,
}

/** A queue `fill` full (0..1) holding `frames` frames now and `framesBefore` at the last judgement. */
export function queueState(fill: number, frames: number, framesBefore: number): QueueState {
  if (fill < PACING_STRETCH_OCCUPANCY) return QueueState.Low;
  return frames > framesBefore ? QueueState.Filling : QueueState.Draining;
}

/** The stretch to ask for next, from the current one and the neediest subscriber queue's state. */
export function nextStretch(stretch: number, state: QueueState): number {
  if (state === QueueState.Filling) return Math.min(stretch * 2, PACING_MAX_STRETCH);
  if (state === QueueState.Draining) return stretch;
  return 1;
}

/** How long a snapshot chunk of `bytes` may be pending while its subscriber asks for longer slices. */
export function snapshotChunkAllowanceMs(bytes: number): number {
  return PACING_SNAPSHOT_LATENCY_MS + (bytes * 1000) / PACING_SNAPSHOT_MIN_BYTES_PER_S;
}
