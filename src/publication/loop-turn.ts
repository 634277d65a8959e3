// A number that changes once per turn (iteration) of the event loop, for work done at most once per
// turn per object (a hub judging its pacing). The native count (LoopTurns) moves in the loop's check
// phase without running JS: telling turns apart used to take a setImmediate per turn, one JS callback
// per delta whenever deltas come one per turn (~20 µs each on a VM, issue 30).
import { LoopTurns } from '../native';

// One counter per thread, made at the first use; it never keeps the loop alive. The counter itself is
// held, not only its array: a collected counter stops counting.
let turns: LoopTurns | undefined;

export function currentTurn(): number {
  turns ??= new LoopTurns();
  return turns.counts[0];
}
