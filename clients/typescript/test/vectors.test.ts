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
import { frameFromJson, frameToJson, fromHex, normalize, toHex } from "./frameJson.js";

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

// JSON.parse loses ints above 2^53: re-read every vector's frames with big ints kept exact (each int becomes a
// bigint by rewriting the number tokens as strings first).
const exactVectors: Vector[] = JSON.parse(
  readFileSync(path, "utf8").replace(/([:\[,]\s*)(\d{16,})(?=\s*[,\]}])/g, '$1"$2"'),
).vectors;
const exactFrames = new Map(exactVectors.map((v) => [v.name, v.frames]));

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
