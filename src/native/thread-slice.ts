// The calling thread's scheduler slice (native/bindings/relay/thread_slice_napi.cc).
import { relayAddon } from './addon';

const addon = relayAddon();

export const setThreadSlice: (microseconds: number) => boolean = addon.setThreadSlice;
export const threadSlice: () => number | null = addon.threadSlice;
