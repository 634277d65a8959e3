// `kv-dc-relay/native`: typed wrappers of the native core; the rest of the code imports from here, never from addon.ts.
export * from './cbi1';
export * from './engine-decoder';
export * from './hashing';
export * from './pool';
export * from './router-event-decoder';
export { addonOrigins, explainLoadFailure, AddonLoadError, type AddonOrigin, type AddonName } from './addon';
export { nativeLimits } from './limits';
export { keptPageBytes } from './pages';
export { setThreadName, setThreadSlice, threadSlice } from './thread-slice';
export { LoopDelay } from './loop-delay';
export { LoopTurns } from './loop-turns';
