// Adaptive publication pacing (issue #8 item 5). The producer decides when a delta is cut, so a
// hub whose subscribers' queues fill asks for longer slices: fewer, larger deltas of absolute
// bucket images, which cost a slow reader far fewer queue slots for the same changes. The request
// is a stretch factor of the configured slice (threshold events and delay); it doubles while the
// fullest queue is at least PACING_STRETCH_OCCUPANCY full and halves back towards 1 once every
// queue has drained. A reader that truly stopped still fills its bounded queue and lags.
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

/** The stretch to ask for next, from the current one and the fullest subscriber queue (0..1). */
export function nextStretch(stretch: number, occupancy: number): number {
  if (occupancy >= PACING_STRETCH_OCCUPANCY) return Math.min(stretch * 2, PACING_MAX_STRETCH);
  if (occupancy === 0) return Math.max(1, stretch / 2);
  return stretch;
}

/** How long a snapshot chunk of `bytes` may be pending while its subscriber asks for longer slices. */
export function snapshotChunkAllowanceMs(bytes: number): number {
  return PACING_SNAPSHOT_LATENCY_MS + (bytes * 1000) / PACING_SNAPSHOT_MIN_BYTES_PER_S;
}
