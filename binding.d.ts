// Types of the whole native addon surface (build/Release/kv_dc_relay.node).
// Only src/native/ imports this file.

/** XXH3-64 of `data` with a 64-bit seed. */
export function xxh3(data: Uint8Array, seed: bigint): bigint;
