/**
 * Header data: an ordered multimap of ASCII keys to byte values (as aqueduct/wire/headers.py).
 *
 * On the wire one var len byte array holding back-to-back var len byte arrays, alternately key and
 * value. Keys are non-empty ASCII; values any bytes. A peer's header data is read under
 * {@link HeaderLimits}: each declared length is checked before its bytes are awaited (LIMIT_EXCEEDED).
 * @module
 */
import { CloseCode, Incomplete, ProtocolError, encodingError } from "./errors.js";
import { concat, encodeBytes, encodeVarint, readBytes } from "./varint.js";

/** Headers: `[key, value]` pairs in order, duplicates kept. */
export type Headers = ReadonlyArray<readonly [string, Uint8Array]>;

/** Caps on a peer's header data, checked while it is read. */
export interface HeaderLimits {
  totalBytes: number;
  count: number;
  nameBytes: number;
  valueBytes: number;
}

export const DEFAULT_HEADER_LIMITS: HeaderLimits = {
  totalBytes: 256 * 1024,
  count: 256,
  nameBytes: 1024,
  valueBytes: 128 * 1024,
};

function isAscii(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b >= 0x80) return false;
  return true;
}

/** Encode header data (throws RangeError for an empty or non-ASCII key). */
export function encodeHeaders(headers: Headers): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [key, value] of headers) {
    const k = new TextEncoder().encode(key);
    if (k.length === 0 || !isAscii(k) || k.length !== key.length) {
      throw new RangeError(`header key must be non-empty ASCII: ${JSON.stringify(key)}`);
    }
    parts.push(encodeBytes(k), encodeBytes(value));
  }
  const inner = concat(parts);
  return concat([encodeVarint(inner.length), inner]);
}

/** Read header data at `pos` within `limits`. */
export function readHeaders(buf: Uint8Array, pos: number, limits: HeaderLimits = DEFAULT_HEADER_LIMITS): [Headers, number] {
  const start = pos;
  const [inner, end] = readBytes(buf, pos, limits.totalBytes, "header data (max_header_bytes)");
  const base = end - inner.length;
  const out: Array<readonly [string, Uint8Array]> = [];
  let ipos = 0;
  try {
    while (ipos < inner.length) {
      if (out.length === limits.count) {
        throw new ProtocolError(`header data at offset ${start} holds more than ${limits.count} headers`,
          CloseCode.LIMIT_EXCEEDED);
      }
      const [key, afterKey] = readBytes(inner, ipos, limits.nameBytes, "header key (max_header_name_bytes)", base);
      if (afterKey === inner.length) {
        throw encodingError(`header data at offset ${start} holds an odd number of byte arrays`);
      }
      const [value, afterValue] = readBytes(inner, afterKey, limits.valueBytes, "header value (max_header_value_bytes)", base);
      if (key.length === 0) throw encodingError(`header key ${out.length} of the header data at offset ${start} is empty`);
      if (!isAscii(key)) throw encodingError(`header key ${out.length} of the header data at offset ${start} is not ASCII`);
      out.push([String.fromCharCode(...key), value.slice()]);
      ipos = afterValue;
    }
  } catch (err) {
    if (err instanceof Incomplete) throw encodingError(`header data at offset ${start} ends inside an item`);
    throw err;
  }
  return [out, end];
}
