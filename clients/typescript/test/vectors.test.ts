// The wire codec against every golden vector of specs/vectors/aqueduct-wire.json, both ways, as
// tests/wire/test_wire_vectors.py reads them: valid bytes decode to the given fields and encode back to
// exactly those bytes; invalid bytes throw ProtocolError (FRAME_ENCODING or LIMIT_EXCEEDED) and nothing else,
// whole and fed byte by byte to the incremental reader.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  CloseCode, FrameReader, ProtocolError, channelIdFields, decodeFrames, decodeVarint, encodeFrames, encodeVarint,
  makeChannelId, type Frame,
} from "../src/wire/index.js";

interface Vector {
  name: string;
  kind: "varint" | "channel_id" | "frames";
  hex: string;
  valid: boolean;
  value?: string;
  direction?: string;
  minted_by?: string;
  oneshot?: boolean;
  index?: string;
  frames?: Array<Record<string, unknown>>;
}

const path = new URL("../../../../specs/vectors/aqueduct-wire.json", import.meta.url);
const vectors: Vector[] = JSON.parse(readFileSync(path, "utf8")).vectors;

const fromHex = (hex: string): Uint8Array => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

// The vectors' JSON shape of a frame: ints as JSON numbers (parsed here exactly from the text below).
function frameToJson(frame: Frame): Record<string, unknown> {
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

function frameFromJson(o: Record<string, unknown>): Frame {
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

// JSON.parse loses ints above 2^53: re-read every vector's frames with big ints kept exact (each int becomes a
// bigint by rewriting the number tokens as strings first).
const exactVectors: Vector[] = JSON.parse(
  readFileSync(path, "utf8").replace(/([:\[,]\s*)(\d{16,})(?=\s*[,\]}])/g, '$1"$2"'),
).vectors;
const exactFrames = new Map(exactVectors.map((v) => [v.name, v.frames]));

function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
  }
  if (typeof value === "bigint" || typeof value === "number") return BigInt(value).toString();
  if (typeof value === "string" && /^\d+$/.test(value)) return value;
  return value;
}

const valid = vectors.filter((v) => v.valid);
const invalid = vectors.filter((v) => !v.valid);

test("the vectors are there and cover what the Python suite covers", () => {
  assert.ok(vectors.length >= 180);
  assert.equal(new Set(valid.filter((v) => v.kind === "frames").flatMap((v) => v.frames!.map((f) => f.type))).size, 10);
});

for (const v of valid) {
  test(`valid ${v.kind} ${v.name}: decodes and encodes to the exact bytes`, () => {
    const bytes = fromHex(v.hex);
    if (v.kind === "frames") {
      const want = exactFrames.get(v.name)!;
      const frames = decodeFrames(bytes);
      assert.deepEqual(normalize(frames.map(frameToJson)), normalize(want));
      assert.equal(toHex(encodeFrames(want.map(frameFromJson))), v.hex);
      const reader = new FrameReader();
      const fed: Frame[] = [];
      for (const b of bytes) fed.push(...reader.feed(Uint8Array.of(b)));
      reader.finish();
      assert.deepEqual(normalize(fed.map(frameToJson)), normalize(want));
    } else {
      const value = decodeVarint(bytes);
      assert.equal(value.toString(), v.value);
      assert.equal(toHex(encodeVarint(BigInt(v.value!))), v.hex);
      if (v.kind === "channel_id") {
        const f = channelIdFields(value);
        assert.equal(f.to === "server" ? "to_server" : "to_client", v.direction);
        assert.equal(f.mintedBy, v.minted_by);
        assert.equal(f.oneshot, v.oneshot);
        assert.equal(f.index.toString(), v.index);
        assert.equal(makeChannelId(f), value);
      }
    }
  });
}

for (const v of invalid) {
  test(`invalid ${v.kind} ${v.name}: ProtocolError`, () => {
    const bytes = fromHex(v.hex);
    const check = (err: unknown): boolean => {
      assert.ok(err instanceof ProtocolError, `not a ProtocolError: ${String(err)}`);
      assert.ok(err.code === CloseCode.FRAME_ENCODING || err.code === CloseCode.LIMIT_EXCEEDED);
      return true;
    };
    if (v.kind === "frames") {
      assert.throws(() => decodeFrames(bytes), check);
      assert.throws(() => {
        const reader = new FrameReader();
        for (const b of bytes) reader.feed(Uint8Array.of(b));
        reader.finish();
      }, check);
    } else {
      assert.throws(() => decodeVarint(bytes), check);
    }
  });
}
