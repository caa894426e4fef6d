/**
 * Aqueduct frames: one object type per frame, and their codec (as aqueduct/wire/frames.py).
 *
 * A frame is a plain object tagged by `type` (the names the golden vectors use). `encodeFrame`
 * writes one; `readFrame(buf, pos, limit)` reads the frame at `pos` and returns it with the
 * position after it, throwing {@link Incomplete} when the buffer ends early and {@link ProtocolError}
 * for malformed bytes. `limit` is the largest length any byte array inside a frame may declare.
 * @module
 */
import { CloseCode, Incomplete, ProtocolError, encodingError } from "./errors.js";
import { DEFAULT_HEADER_LIMITS, type HeaderLimits, type Headers, encodeHeaders, readHeaders } from "./headers.js";
import { encodeRanges, readRanges } from "./ranges.js";
import { concat, encodeBytes, encodeIntArray, encodeVarint, readBytes, readIntArray, readVarint } from "./varint.js";

export const PROTOCOL_VERSION = "0.0.0-AFTER";
export const VERSION_MAGIC = Uint8Array.of(80, 95, 166, 96, 15, 64, 142);
const VERSION_TEXT = new TextEncoder().encode("AQUEDUCT");

/** Frame type bytes. */
export const FrameType = {
  Version: 239,
  ConnectionControl: 1,
  ChannelControl: 2,
  Message: 3,
  SentUnreliable: 4,
  AckReliable: 5,
  AckNackUnreliable: 6,
  FinishSender: 7,
  CloseReceiver: 8,
  ClosedChannelLost: 9,
} as const;

/** First frame of a stream or datagram sent before the peer's headers are known. */
export interface Version { type: "Version"; version: string }
/** A side's connection headers, sent once on the connection control stream. */
export interface ConnectionControl { type: "ConnectionControl"; headers: Headers }
/** Opens a channel control stream for `channel`. */
export interface ChannelControl { type: "ChannelControl"; channel: bigint }
/** One message on `channel`, with the IDs of channels it attaches. */
export interface Message { type: "Message"; channel: bigint; number: bigint; attachments: bigint[]; payload: Uint8Array }
/** How many unreliable messages were sent since the previous SentUnreliable. */
export interface SentUnreliable { type: "SentUnreliable"; count: bigint }
/** Acks of reliable messages as range ints (negative runs: not yet known). */
export interface AckReliable { type: "AckReliable"; ranges: bigint[] }
/** Acks (positive runs) and committing nacks (negative runs) of unreliable messages. */
export interface AckNackUnreliable { type: "AckNackUnreliable"; ranges: bigint[] }
/** The sender finished after sending `reliableCount` reliable messages. */
export interface FinishSender { type: "FinishSender"; reliableCount: bigint }
/** The receiver's final reliable acks and nacks as range ints. */
export interface CloseReceiver { type: "CloseReceiver"; ranges: bigint[] }
/** A channel whose control stream is gone was found lost in transit. */
export interface ClosedChannelLost { type: "ClosedChannelLost"; channel: bigint }

export type Frame =
  | Version | ConnectionControl | ChannelControl | Message | SentUnreliable
  | AckReliable | AckNackUnreliable | FinishSender | CloseReceiver | ClosedChannelLost;

const VERSION_PREFIX = concat([Uint8Array.of(FrameType.Version), VERSION_MAGIC, VERSION_TEXT]);
const EMPTY_ARRAY = Uint8Array.of(0);

/** Encode a Message frame from its fields (the hot path: numbers, no frame object). */
export function encodeMessage(channel: number | bigint, number: number | bigint, attachments: readonly (number | bigint)[],
  payload: Uint8Array): Uint8Array {
  return concat([
    Uint8Array.of(FrameType.Message),
    encodeVarint(channel),
    encodeVarint(number),
    attachments.length ? encodeIntArray(attachments.map((a) => BigInt(a))) : EMPTY_ARRAY,
    encodeVarint(payload.length),
    payload,
  ]);
}

function withType(type: number, body: Uint8Array): Uint8Array {
  return concat([Uint8Array.of(type), body]);
}

/** Encode one frame. */
export function encodeFrame(frame: Frame): Uint8Array {
  switch (frame.type) {
    case "Message":
      return encodeMessage(frame.channel, frame.number, frame.attachments, frame.payload);
    case "Version": {
      const text = new TextEncoder().encode(frame.version);
      return concat([VERSION_PREFIX, encodeBytes(text)]);
    }
    case "ConnectionControl":
      return withType(FrameType.ConnectionControl, encodeHeaders(frame.headers));
    case "ChannelControl":
      return withType(FrameType.ChannelControl, encodeVarint(frame.channel));
    case "SentUnreliable":
      return withType(FrameType.SentUnreliable, encodeVarint(frame.count));
    case "AckReliable":
      return withType(FrameType.AckReliable, encodeRanges(frame.ranges));
    case "AckNackUnreliable":
      return withType(FrameType.AckNackUnreliable, encodeRanges(frame.ranges));
    case "FinishSender":
      return withType(FrameType.FinishSender, encodeVarint(frame.reliableCount));
    case "CloseReceiver":
      return withType(FrameType.CloseReceiver, encodeRanges(frame.ranges));
    case "ClosedChannelLost":
      return withType(FrameType.ClosedChannelLost, encodeVarint(frame.channel));
  }
}

/** Encode frames back to back. */
export function encodeFrames(frames: readonly Frame[]): Uint8Array {
  return concat(frames.map(encodeFrame));
}

function readVersion(buf: Uint8Array, pos: number, limit: number): [Frame, number] {
  const end = pos + VERSION_PREFIX.length;
  const avail = Math.min(end, buf.length);
  for (let i = pos; i < avail; i++) {
    if (buf[i] !== VERSION_PREFIX[i - pos]) {
      const bad = i - pos <= VERSION_MAGIC.length ? "magic bytes" : "text";
      throw encodingError(`Version frame at offset ${pos} has wrong ${bad}`);
    }
  }
  if (avail < end) throw new Incomplete(end);
  const [raw, after] = readBytes(buf, end, Math.min(limit, 255), "version string");
  for (const b of raw) if (b >= 0x80) throw encodingError(`Version frame at offset ${pos} has a non-ASCII version`);
  return [{ type: "Version", version: String.fromCharCode(...raw) }, after];
}

/** Read the frame at `pos`; return it and the position after it. */
export function readFrame(buf: Uint8Array, pos: number, limit: number,
  headerLimits: HeaderLimits = DEFAULT_HEADER_LIMITS): [Frame, number] {
  if (pos >= buf.length) throw new Incomplete(pos + 1);
  const kind = buf[pos]!;
  switch (kind) {
    case FrameType.Version:
      return readVersion(buf, pos, limit);
    case FrameType.ConnectionControl: {
      const limits = limit < headerLimits.totalBytes ? { ...headerLimits, totalBytes: limit } : headerLimits;
      const [headers, end] = readHeaders(buf, pos + 1, limits);
      return [{ type: "ConnectionControl", headers }, end];
    }
    case FrameType.Message: {
      const [channel, p1] = readVarint(buf, pos + 1);
      const [number, p2] = readVarint(buf, p1);
      const [attachments, p3] = readIntArray(buf, p2, limit, "message attachments");
      const [payload, p4] = readBytes(buf, p3, limit, "message payload");
      return [{ type: "Message", channel, number, attachments, payload: payload.slice() }, p4];
    }
    case FrameType.ChannelControl:
    case FrameType.ClosedChannelLost: {
      const [channel, end] = readVarint(buf, pos + 1);
      return [{ type: kind === FrameType.ChannelControl ? "ChannelControl" : "ClosedChannelLost", channel }, end];
    }
    case FrameType.SentUnreliable: {
      const [count, end] = readVarint(buf, pos + 1);
      return [{ type: "SentUnreliable", count }, end];
    }
    case FrameType.FinishSender: {
      const [reliableCount, end] = readVarint(buf, pos + 1);
      return [{ type: "FinishSender", reliableCount }, end];
    }
    case FrameType.AckReliable:
    case FrameType.AckNackUnreliable:
    case FrameType.CloseReceiver: {
      const [ranges, end] = readRanges(buf, pos + 1, limit);
      const type = kind === FrameType.AckReliable ? "AckReliable"
        : kind === FrameType.AckNackUnreliable ? "AckNackUnreliable" : "CloseReceiver";
      return [{ type, ranges }, end];
    }
    default:
      throw new ProtocolError(`unknown frame type ${kind} at offset ${pos}`, CloseCode.FRAME_ENCODING);
  }
}
