// Memory the native core holds outside the pools' own tables (native/bindings/relay/pages_napi.cc).
import { relayAddon } from './addon';

const addon = relayAddon();

/**
 * Bytes of drained table pages kept for the next table growth (a few seconds, at most 1 GiB): part of
 * the process's RSS that no pool's state bytes count.
 */
export const keptPageBytes: () => number = addon.keptPageBytes;
