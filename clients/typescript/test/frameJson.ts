// Frames to and from the JSON shape of specs/vectors/aqueduct-wire.json (as aqueduct/wire/vectors.py), for the tests.
import type { Frame } from "../src/wire/index.js";

export const fromHex = (hex: string): Uint8Array => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
export const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** One frame as a JSON object (ints as bigints). */
export function frameToJson(frame: Frame): Record<string, unknown> {
  switch (frame.type) {
    case "Version": return { type: "Version", version: frame.version };
    case "ConnectionControl": return { type: "ConnectionControl", headers: frame.headers.map(([k, v]) => [k, toHex(v)]) };
    case "ChannelControl": return { type: "ChannelControl", channel: frame.channel };
    case "ClosedChannelLost": return { type: "ClosedChannelLost", channel: frame.channel };
    case "Message": return { type: "Message", channel: frame.channel, number: frame.number,
      attachments: frame.attachments, payload: toHex(frame.payload) };
    case "SentUnreliable": return { type: "SentUnreliable", count: frame.count };
    case "FinishSender": return { type: "FinishSender", reliable_count: frame.reliableCount };
    case "AckReliable": case "AckNackUnreliable": case "CloseReceiver": return { type: frame.type, ranges: frame.ranges };
  }
}

/** One JSON frame object as a frame. */
export function frameFromJson(o: Record<string, unknown>): Frame {
  const big = (v: unknown): bigint => BigInt(v as bigint);
  switch (o.type) {
    case "Version": return { type: "Version", version: o.version as string };
    case "ConnectionControl": return { type: "ConnectionControl",
      headers: (o.headers as [string, string][]).map(([k, v]) => [k, fromHex(v)] as const) };
    case "ChannelControl": return { type: "ChannelControl", channel: big(o.channel) };
    case "ClosedChannelLost": return { type: "ClosedChannelLost", channel: big(o.channel) };
    case "Message": return { type: "Message", channel: big(o.channel), number: big(o.number),
      attachments: (o.attachments as unknown[]).map(big), payload: fromHex(o.payload as string) };
    case "SentUnreliable": return { type: "SentUnreliable", count: big(o.count) };
    case "FinishSender": return { type: "FinishSender", reliableCount: big(o.reliable_count) };
    case "AckReliable": case "AckNackUnreliable": case "CloseReceiver":
      return { type: o.type, ranges: (o.ranges as unknown[]).map(big) };
  }
  throw new Error(`unknown frame type ${String(o.type)}`);
}

/** Ints (numbers, bigints, digit strings) as decimal strings, everywhere in a JSON value: to compare exactly. */
export function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
  }
  if (typeof value === "bigint" || typeof value === "number") return BigInt(value).toString();
  return value;
}
