/**
 * Serialization middleware: a {@link Codec} turns application values into payload bytes plus the channel halves
 * to attach, and back (as aqueduct/api/codec.py).
 *
 * {@link CborCodec} (cborg) writes the CBOR Python's cbor2 writes: objects as maps in insertion order, `Uint8Array`
 * as byte strings, integers as ints up to 2^64 (cbor-x was tried first: it writes integers past 2^32 as floats, which
 * the Python side's typed fields refuse), other numbers as float64. Decoding knows the tags the Python side writes
 * (attachments, the lag notice, dates) and refuses value sharing (tags 28/29) and any other tag. A {@link Sender} or {@link Receiver} anywhere in a value
 * becomes CBOR tag 24945 holding its attachment index; decoding puts the halves the peer attached back in their
 * places. Each attachment index may be used once and must be one the message carried (else CodecError). The
 * codec's name, announced in the `codec` connection header, is the Python side's: "cbor-a1d0c7".
 * @module
 */
import { Token, Type, decode as cborDecode, encode as cborEncode } from "cborg";

import { CodecError } from "../errors.js";
import { Half } from "./halves.js";

/** CBOR tag (0x6171, "aq") whose content is the index of an attachment of the message. */
export const ATTACHMENT_TAG = 24945;
/** CBOR tag of a broadcast's lag notice (a whole payload only). */
export const LAGGED_TAG = 24946;

/** Serialization middleware between application values and message payloads. */
export interface Codec {
  /** Announced in the `codec` connection header; both sides must agree. */
  readonly name: string;
  /** Payload bytes and the halves to attach, in attachment order. */
  encode(value: unknown): [Uint8Array, Half[]];
  /** The value for a payload and the halves the peer attached to it. */
  decode(payload: Uint8Array, halves: readonly Half[]): unknown;
}

// The halves of the message being encoded or decoded (cborg's hooks are synchronous and take no context).
let encoding: Half[] | null = null;
let decoding: { halves: readonly Half[]; used: boolean[] } | null = null;

function encodeObject(obj: unknown): Token[] | null {
  if (!(obj instanceof Half)) return null;
  if (encoding === null) throw new CodecError("a channel half can only be encoded inside a message");
  if (encoding.includes(obj)) throw new CodecError("the same channel half appears twice in one message");
  encoding.push(obj);
  return [new Token(Type.tag, ATTACHMENT_TAG), new Token(Type.uint, encoding.length - 1)];
}

function decodeHalf(index: unknown): Half {
  if (decoding === null) throw new CodecError("attachment tag outside a message");
  if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= decoding.halves.length) {
    throw new CodecError(`attachment index ${String(index)} out of range (message has ${decoding.halves.length})`);
  }
  if (decoding.used[index]) throw new CodecError(`attachment index ${index} used twice`);
  decoding.used[index] = true;
  return decoding.halves[index]!;
}

const refuseSharing = (): never => {
  throw new CodecError("CBOR value sharing (tags 28/29) is refused");
};

/** cbor2's own encodings: floats as float64, maps in insertion order (a stable sort that keeps every key where it is). */
const ENCODE_OPTIONS = { float64: true, mapSorter: () => 0, typeEncoders: { Object: encodeObject } };
/** Tag decoders: each gets cborg's `decode` of the tag's content. */
const TAGS: Array<(decode: () => unknown) => unknown> = [];
TAGS[ATTACHMENT_TAG] = (decode) => decodeHalf(decode());
TAGS[LAGGED_TAG] = (decode) => {
  const n = decode();
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) throw new CodecError("malformed lag notice");
  return new LagNotice(n);
};
TAGS[0] = (decode) => new Date(String(decode()));
TAGS[1] = (decode) => new Date(Number(decode()) * 1000);
TAGS[28] = refuseSharing;
TAGS[29] = refuseSharing;
const DECODE_OPTIONS = { tags: TAGS, useMaps: false, rejectDuplicateMapKeys: true };

/** A broadcast's in-band notice that `n` values were skipped (decoded from a whole payload of tag 24946). */
export class LagNotice {
  constructor(readonly n: number) {}
}

/** CBOR payloads; halves anywhere inside become attachments. */
export class CborCodec implements Codec {
  readonly name = "cbor-a1d0c7";

  encode(value: unknown): [Uint8Array, Half[]] {
    const found: Half[] = [];
    encoding = found;
    try {
      return [cborEncode(value, ENCODE_OPTIONS as never), found];
    } catch (err) {
      if (err instanceof CodecError) throw err;
      throw new CodecError(`cannot encode as CBOR: ${(err as Error).message}`);
    } finally {
      encoding = null;
    }
  }

  decode(payload: Uint8Array, halves: readonly Half[]): unknown {
    decoding = { halves, used: halves.map(() => false) };
    try {
      return cborDecode(payload, DECODE_OPTIONS as never);
    } catch (err) {
      for (const h of halves) h.discard();
      if (err instanceof CodecError) throw err;
      throw new CodecError(`malformed CBOR payload: ${(err as Error).message}`);
    } finally {
      decoding = null;
    }
  }
}

/** The codec both sides use unless told otherwise. */
export const DEFAULT_CODEC: Codec = new CborCodec();
