// stable_dc_id (identity-topology-load.md §1.4): u64 LE of the first 8 bytes of
// BLAKE3("dynamo/indexer-dc/v1" ++ u32 LE len(s) ++ s). The tag is not framed.
import { isValidText } from '../wire/text';
import { MaterialWriter, blake3Hash } from './material';

export const DC_ID_TAG = 'dynamo/indexer-dc/v1';

export function dcIdMaterial(s: string): Buffer {
  return new MaterialWriter().raw(DC_ID_TAG).framed(s).bytes();
}

/** Defined for every string; the Relay only accepts ones that pass dcIdStringError. */
export function stableDcId(s: string): bigint {
  return Buffer.from(blake3Hash(dcIdMaterial(s))).readBigUInt64LE(0);
}

/** Why the Relay rejects an operator DC id string (empty, surrounding whitespace), or undefined. */
export function dcIdStringError(s: string): string | undefined {
  if (s.length === 0) return 'DC id must not be empty';
  // Rust str::trim semantics (Unicode White_Space), as the reference checks.
  if (!isValidText(s)) return 'DC id must not have surrounding whitespace';
  return undefined;
}

/** Display form `{:016x}`. */
export function formatDcId(dcId: bigint): string {
  return dcId.toString(16).padStart(16, '0');
}
