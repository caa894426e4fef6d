/**
 * Var len ints (LEB128, minimal, at most 64 bits) and var len byte arrays (as aqueduct/wire/varint.py).
 *
 * Values are `bigint` on the wire side: the spec's ints are full 64-bit values and the golden vectors
 * use all of them. Readers take `(buf, pos)` and return `[value, newPos]`; running out of bytes throws
 * {@link Incomplete} (an incremental reader waits for more), malformed bytes a {@link ProtocolError}.
 * Byte arrays declaring more than `limit` bytes are refused (LIMIT_EXCEEDED) before their bytes are awaited.
 * @module
 */
import { CloseCode, Incomplete, ProtocolError, encodingError } from "./errors.js";

/** 2^64 - 1, the largest var len int. */
export const MAX_VARINT = (1n << 64n) - 1n;

/** Encode `value` (0 to 2^64-1) as a minimal var len int. */
export function encodeVarint(value: bigint | number): Uint8Array {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`var len int out of range: ${value}`);
    if (value < 0x80) return Uint8Array.of(value);
    const out: number[] = [];
    while (value >= 0x80) {
      out.push((value % 0x80) | 0x80);
      value = Math.floor(value / 0x80);
    }
    out.push(value);
    return Uint8Array.from(out);
  }
  if (value < 0n || value > MAX_VARINT) throw new RangeError(`var len int out of range: ${value}`);
  if (value < 0x80n) return Uint8Array.of(Number(value));
  const out: number[] = [];
  while (value >= 0x80n) {
    out.push(Number(value & 0x7fn) | 0x80);
    value >>= 7n;
  }
  out.push(Number(value));
  return Uint8Array.from(out);
}

/** Read one var len int at `pos`; `base` is added to offsets named in errors. */
export function readVarint(buf: Uint8Array, pos: number, base = 0): [bigint, number] {
  if (pos >= buf.length) throw new Incomplete(pos + 1);
  const first = buf[pos]!;
  if (first < 0x80) return [BigInt(first), pos + 1];
  const start = pos;
  // Up to 7 bytes (49 bits) fit a JS number exactly: accumulate there, then widen.
  let small = first & 0x7f;
  let mul = 0x80;
  pos += 1;
  for (let i = 1; i < 7; i++) {
    if (pos >= buf.length) throw new Incomplete(pos + 1);
    const byte = buf[pos++]!;
    small += (byte & 0x7f) * mul;
    if (byte < 0x80) {
      if (byte === 0) throw encodingError(`var len int at offset ${base + start} is not minimally encoded`);
      return [BigInt(small), pos];
    }
    mul *= 0x80;
  }
  let value = BigInt(small);
  let shift = 49n;
  for (;;) {
    if (pos >= buf.length) throw new Incomplete(pos + 1);
    const byte = buf[pos++]!;
    if (shift === 63n) {
      // Tenth byte: only the 64th bit may remain, and it must be set.
      if (byte !== 0x01) {
        throw encodingError(byte > 1
          ? `var len int at offset ${base + start} has more than 64 bits`
          : `var len int at offset ${base + start} is not minimally encoded`);
      }
      return [value | (1n << 63n), pos];
    }
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) {
      if (byte === 0) throw encodingError(`var len int at offset ${base + start} is not minimally encoded`);
      return [value, pos];
    }
    shift += 7n;
  }
}

/** Decode a buffer holding exactly one var len int. */
export function decodeVarint(data: Uint8Array): bigint {
  let value: bigint;
  let pos: number;
  try {
    [value, pos] = readVarint(data, 0);
  } catch (err) {
    if (err instanceof Incomplete) throw encodingError("var len int is truncated");
    throw err;
  }
  if (pos !== data.length) throw encodingError(`${data.length - pos} trailing bytes after var len int`);
  return value;
}

/** Join byte arrays. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Encode a var len byte array. */
export function encodeBytes(data: Uint8Array): Uint8Array {
  return concat([encodeVarint(data.length), data]);
}

/** Read a var len byte array of at most `limit` bytes; `what` names it in errors. */
export function readBytes(buf: Uint8Array, pos: number, limit: number, what: string, base = 0): [Uint8Array, number] {
  const start = pos;
  const [length, after] = readVarint(buf, pos, base);
  if (length > BigInt(limit)) {
    throw new ProtocolError(
      `${what} at offset ${base + start} declares ${length} bytes, beyond the limit of ${limit}`,
      CloseCode.LIMIT_EXCEEDED,
    );
  }
  const end = after + Number(length);
  if (end > buf.length) throw new Incomplete(end);
  return [buf.subarray(after, end), end];
}

/** Read a var len byte array filled with var len ints. */
export function readIntArray(buf: Uint8Array, pos: number, limit: number, what: string): [bigint[], number] {
  const start = pos;
  const [inner, end] = readBytes(buf, pos, limit, what);
  const base = end - inner.length;
  const out: bigint[] = [];
  let ipos = 0;
  try {
    while (ipos < inner.length) {
      const [value, next] = readVarint(inner, ipos, base);
      out.push(value);
      ipos = next;
    }
  } catch (err) {
    if (err instanceof Incomplete) throw encodingError(`${what} at offset ${start} ends inside a var len int`);
    throw err;
  }
  return [out, end];
}

/** Encode ints back to back inside a var len byte array. */
export function encodeIntArray(ints: readonly bigint[]): Uint8Array {
  const inner = concat(ints.map((i) => encodeVarint(i)));
  return concat([encodeVarint(inner.length), inner]);
}
