/**
 * Ids as the shard's records keep them: a 30-character id of `newId` (lib/ids.ts: Crockford
 * base32, 5 bits a character) packed into 19 bytes, big-endian, so the bytes sort as the text does
 * and an index on them still pages newest first. 150 bits in 152: the last two are zero. Text of any
 * other shape (ids made before newId, names, bodies that are not ids) is kept as text: a blob can
 * only have come from here, so decoding is exact either way.
 */
import { ID_ALPHABET as ALPHABET, idTimePrefix } from "../lib/ids.js";

const ID_CHARS = 30;
export const ID_BYTES = 19;
const ID_SHAPE = /^[0-9a-hjkmnp-tv-z]{30}$/;
const VALUE = new Map([...ALPHABET].map((c, i) => [c, i]));

export function idBytes(id: string): Uint8Array | undefined {
  if (!ID_SHAPE.test(id)) return undefined;
  const out = new Uint8Array(ID_BYTES);
  let acc = 0;
  let bits = 0;
  let at = 0;
  for (const c of id) {
    acc = (acc << 5) | VALUE.get(c)!;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[at++] = (acc >> bits) & 0xff;
      acc &= (1 << bits) - 1;
    }
  }
  out[at] = (acc << (8 - bits)) & 0xff;
  return out;
}

export function idText(bytes: Uint8Array): string {
  if (bytes.byteLength !== ID_BYTES) throw new Error(`a packed id has ${bytes.byteLength} bytes, not ${ID_BYTES}`);
  let out = "";
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5 && out.length < ID_CHARS) {
      bits -= 5;
      out += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

/** Text as the shard's tables keep it: packed when it has an id's shape, as it is otherwise. */
export const stored = (text: string): ArrayBuffer | string => (idBytes(text)?.buffer as ArrayBuffer | undefined) ?? text;

/** A kept value back as it was: a blob can only be a packed id. */
export const unstored = <T>(value: T | ArrayBuffer): T | string => (value instanceof ArrayBuffer ? idText(new Uint8Array(value)) : value);

/** The smallest packed id of a millisecond: every id made at or after `ms` sorts at or after it. */
export const idFloorAt = (ms: number): Uint8Array => idBytes(idTimePrefix(ms).padEnd(ID_CHARS, "0"))!;
