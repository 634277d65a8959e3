// Adaptive publication pacing (issue #8 item 5). The producer decides when a delta is cut, so a
// hub whose subscribers' queues fill asks for longer slices: fewer, larger deltas of absolute
// bucket images, which cost a slow reader far fewer queue slots for the same changes. The request
// is a stretch factor of the configured slice (threshold events and delay); it doubles while the
// fullest queue is at least PACING_STRETCH_OCCUPANCY full and halves back towards 1 once every
// queue has drained. A reader that truly stopped still fills its bounded queue and lags.
import { PACING_MAX_STRETCH, PACING_STRETCH_OCCUPANCY } from '../config/defaults';

/** The stretch to ask for next, from the current one and the fullest subscriber queue (0..1). */
export function nextStretch(stretch: number, occupancy: number): number {
  if (occupancy >= PACING_STRETCH_OCCUPANCY) return Math.min(stretch * 2, PACING_MAX_STRETCH);
  if (occupancy === 0) return Math.max(1, stretch / 2);
  return stretch;
}
