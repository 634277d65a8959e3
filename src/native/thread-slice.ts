// The calling thread's scheduler slice (native/thread_slice_napi.cc).
import { addon } from './addon';

export const setThreadSlice: (microseconds: number) => boolean = addon.setThreadSlice;
export const threadSlice: () => number | null = addon.threadSlice;
