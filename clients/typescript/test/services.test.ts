// Typed service stubs over a scripted server: the call message is what Python's services expect (method, the
// parameters, a oneshot reply sender, meta), results, streaming results, declared and undeclared errors, and a
// call given up closes its reply receiver (which cancels the server's task). The types are the ones
// scripts/service-types.mjs generates from `aqueduct schema` of examples/services.py's Calculator
// (test/fixtures/; tests/typescript/test_service_schema.py keeps the schema current).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { CborCodec, RemoteError, Receiver, Sender, Timeout, service } from "../src/index.js";
import type { Frame } from "../src/wire/index.js";
import type { CalculatorCall } from "./fixtures/calculator.js";
import { Scripted } from "./scripted.js";

const codec = new CborCodec();
const msg = (channel: number, value: unknown, attachments: number[] = [], number = 0): Frame => ({
  type: "Message", channel: BigInt(channel), number: BigInt(number), attachments: attachments.map(BigInt),
  payload: codec.encode(value)[0],
});

class Overflow extends Error {}

test("the generated types are what the generator makes of the schema fixture", () => {
  const pkg = new URL("../../", import.meta.url);
  const made = execFileSync("node", ["scripts/service-types.mjs", "Calculator", "test/fixtures/calculator.schema.txt",
    "--from", "../../src/index.js"], { cwd: pkg, encoding: "utf8" });
  assert.equal(made, readFileSync(new URL("test/fixtures/calculator.ts", pkg), "utf8"));
});

test("a call: one message with method, parameters and a oneshot reply; the value resolves the call", async () => {
  const s = new Scripted();
  const calc = service<CalculatorCall>(s.conn.entrypoint as Sender<CalculatorCall>);
  const sum = calc.add({ a: 2, b: 3 });
  const [m] = s.written(2);
  assert.ok(m && m.type === "Message");
  assert.deepEqual(m.attachments, [5n]); // a oneshot sender for the server
  const stand = new Sender(null, true);
  assert.deepEqual(codec.decode(m.payload, [stand]), { method: "add", a: 2, b: 3, reply: stand });
  s.peer(1, [{ type: "ChannelControl", channel: 5n }]);
  s.peer(3, [msg(5, { value: 5 })], true);
  s.peer(1, [{ type: "FinishSender", reliableCount: 1n }], true);
  const result: number = await sum;
  assert.equal(result, 5);
});

test("a streaming result arrives as a Receiver", async () => {
  const s = new Scripted();
  const calc = service<CalculatorCall>(s.conn.entrypoint as Sender<CalculatorCall>);
  const counting = calc.count({ upto: 2 });
  s.written(2);
  s.peer(3, [msg(5, { value: new Sender(null, false) }, [3])].map((f) => ({ ...f, payload: Uint8Array.of(0xa1, 0x65, 0x76, 0x61, 0x6c, 0x75, 0x65, 0xd9, 0x61, 0x71, 0x00) })), true);
  const numbers: Receiver<number> = await counting;
  s.peer(7, [msg(3, 0), msg(3, 1, [], 1)]);
  s.peer(4, [{ type: "FinishSender", reliableCount: 2n }], true); // on the control stream we opened for it
  const got: number[] = [];
  for await (const n of numbers) got.push(n);
  assert.deepEqual(got, [0, 1]);
});

test("errors: a declared type is thrown as itself, others as RemoteError", async () => {
  const s = new Scripted();
  const calc = service<CalculatorCall>(s.conn.entrypoint as Sender<CalculatorCall>, { errors: { Overflow } });
  const first = calc.add({ a: 1, b: 2 });
  s.peer(3, [msg(5, { error: { type: "Overflow", message: "too big", method: "add" } })], true);
  await assert.rejects(first, (err: unknown) => err instanceof Overflow && err.message === "too big");
  const second = calc.slow({ seconds: 1 });
  s.peer(7, [msg(13, { error: { type: "KeyError", message: "'x'", method: "slow" } })], true);
  await assert.rejects(second, (err: unknown) => err instanceof RemoteError && err.type === "KeyError" && err.method === "slow");
});

test("a call given up (timeout, abort) closes its reply receiver and tells the server the time left", async () => {
  const s = new Scripted();
  const calc = service<CalculatorCall>(s.conn.entrypoint as Sender<CalculatorCall>);
  const slow = calc.slow({ seconds: 10 }, { timeout: 5, metadata: { who: "test" } });
  const [m] = s.written(2);
  assert.ok(m && m.type === "Message");
  const stand = new Sender(null, true);
  assert.deepEqual(codec.decode(m.payload, [stand]), { method: "slow", seconds: 10, reply: stand,
    meta: { timeout: 0.005, metadata: { who: "test" } } });
  await assert.rejects(slow, Timeout);
  s.peer(1, [{ type: "ChannelControl", channel: 5n }]);
  assert.deepEqual(s.written(1).map((f) => f.type), ["CloseReceiver"]);

  const aborts = new AbortController();
  const aborted = calc.slow({ seconds: 10 }, { signal: aborts.signal });
  aborts.abort(new Error("user left"));
  await assert.rejects(aborted, /user left/);
  s.peer(5, [{ type: "ChannelControl", channel: 13n }]);
  assert.deepEqual(s.written(5).map((f) => f.type), ["CloseReceiver"]);
});
