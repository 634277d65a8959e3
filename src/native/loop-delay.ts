// The calling thread's event-loop delay without a sampling timer (native/bindings/relay/loop_delay_napi.cc).
import { relayAddon } from './addon';

export const LoopDelay = relayAddon().LoopDelay;
export type LoopDelay = InstanceType<typeof LoopDelay>;
