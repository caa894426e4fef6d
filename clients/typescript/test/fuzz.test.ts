// Bad input is expected input: seeded random bytes and random cuts of the golden vectors' frames, fed to the
// decoder whole and to the incremental reader in random chunks. Every buffer either decodes, and then re-encodes to
// exactly its bytes (the encoding is canonical: minimal ints, no zero runs) with the reader agreeing chunk by chunk,
// or throws a ProtocolError with a close code, and nothing else.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { CloseCode, FrameReader, ProtocolError, decodeFrames, encodeFrames, type Frame } from "../src/wire/index.js";
import { fromHex, toHex } from "./frameJson.js";

/** xorshift32: the same cases on every run. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const vectors: Array<{ kind: string; hex: string; valid: boolean }> = JSON.parse(
  readFileSync(new URL("../../../../specs/vectors/aqueduct-wire.json", import.meta.url), "utf8"),
).vectors;
const seeds = vectors.filter((v) => v.kind === "frames").map((v) => fromHex(v.hex));
const CODES = new Set<number>([CloseCode.FRAME_ENCODING, CloseCode.LIMIT_EXCEEDED]);

function outcome(decode: () => Frame[]): Frame[] | ProtocolError {
  try {
    return decode();
  } catch (err) {
    assert.ok(err instanceof ProtocolError, `not a ProtocolError: ${String(err)}`);
    assert.ok(CODES.has(err.code), `close code ${err.code}`);
    return err;
  }
}

function check(bytes: Uint8Array, random: () => number): void {
  const whole = outcome(() => decodeFrames(bytes, 1 << 16));
  const reader = new FrameReader(1 << 16);
  const chunked = outcome(() => {
    const out: Frame[] = [];
    let at = 0;
    while (at < bytes.length) {
      const n = 1 + Math.floor(random() * 8);
      out.push(...reader.feed(bytes.subarray(at, at + n)));
      at += n;
    }
    reader.finish();
    return out;
  });
  if (whole instanceof ProtocolError) {
    assert.ok(chunked instanceof ProtocolError, `the reader took what decodeFrames refused: ${toHex(bytes)}`);
    return;
  }
  assert.equal(toHex(encodeFrames(whole)), toHex(bytes), "not canonical");
  assert.ok(!(chunked instanceof ProtocolError), `the reader refused what decodeFrames took: ${toHex(bytes)}`);
  assert.equal(toHex(encodeFrames(chunked)), toHex(bytes));
}

test("random bytes: decoded canonically or refused with a ProtocolError", () => {
  const random = rng(37);
  for (let i = 0; i < 5000; i++) {
    const bytes = Uint8Array.from({ length: Math.floor(random() * 24) }, () => {
      const r = random();
      return r < 0.3 ? Math.floor(random() * 10) : r < 0.4 ? 239 : Math.floor(random() * 256);
    });
    check(bytes, random);
  }
});

test("the vectors cut, spliced and flipped: decoded canonically or refused with a ProtocolError", () => {
  const random = rng(2026);
  for (let i = 0; i < 5000; i++) {
    const a = seeds[Math.floor(random() * seeds.length)]!;
    const b = seeds[Math.floor(random() * seeds.length)]!;
    let bytes = Uint8Array.from([...a.subarray(0, Math.floor(random() * (a.length + 1))),
      ...b.subarray(Math.floor(random() * (b.length + 1)))]);
    if (bytes.length && random() < 0.5) {
      bytes = bytes.slice();
      const at = Math.floor(random() * bytes.length);
      bytes[at] = bytes[at]! ^ (1 << Math.floor(random() * 8));
    }
    check(bytes, random);
  }
});
