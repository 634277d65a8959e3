// The calling thread's scheduler slice and name (native/bindings/relay/thread_slice_napi.cc).
import { relayAddon } from './addon';

const addon = relayAddon();

export const setThreadSlice: (microseconds: number) => boolean = addon.setThreadSlice;
export const threadSlice: () => number | null = addon.threadSlice;
export const setThreadName: (name: string) => boolean = addon.setThreadName;
