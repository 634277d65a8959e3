// Little-endian identity material framing (kv-router identity): count(n) = u32 LE n,
// framed(b) = u32 LE len(b) ++ b. Strings are framed as their UTF-8 bytes.
import { blake3 } from '@noble/hashes/blake3';

export class MaterialWriter {
  private readonly parts: Buffer[] = [];

  u16(value: number): this {
    const b = Buffer.alloc(2);
    b.writeUInt16LE(value);
    this.parts.push(b);
    return this;
  }

  u32(value: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(value);
    this.parts.push(b);
    return this;
  }

  count(n: number): this {
    return this.u32(n);
  }

  raw(bytes: Uint8Array | string): this {
    this.parts.push(typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : Buffer.from(bytes));
    return this;
  }

  framed(bytes: Uint8Array | string): this {
    const b = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : Buffer.from(bytes);
    return this.u32(b.length).raw(b);
  }

  bytes(): Buffer {
    return Buffer.concat(this.parts);
  }
}

export function blake3Hash(material: Uint8Array): Uint8Array {
  return blake3(material);
}

/** digest16: the first 16 bytes of BLAKE3(material). */
export function digest16(material: Uint8Array): Uint8Array {
  return blake3Hash(material).slice(0, 16);
}
