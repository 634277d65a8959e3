// The calling thread's event-loop iterations, counted without JS (native/bindings/relay/loop_turns_napi.cc).
import { relayAddon } from './addon';

export const LoopTurns = relayAddon().LoopTurns;
export type LoopTurns = InstanceType<typeof LoopTurns>;
