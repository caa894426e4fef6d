// The API over a scripted server: the test plays the server's side of the wire (frames in, frames out) against a
// Connection whose transport records the engine's commands, so channels, attachments both ways, request and the
// CBOR codec are checked without a network. The CBOR bytes are the ones Python's cbor2 writes for the same values.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  CborCodec, ChannelFinished, ChannelLost, ReceiverDropped, Sender, Timeout, channel, request,
} from "../src/index.js";
import type { Frame } from "../src/wire/index.js";
import { fromHex, toHex } from "./frameJson.js";
import { Scripted } from "./scripted.js";

const codec = new CborCodec();

test("CBOR: the bytes cbor2 writes for the same value, both ways", () => {
  const value = { a: 1, b: "x", c: Uint8Array.of(1, 2), d: [1.5, null, true], e: -3, big: 2 ** 40 };
  const hex = "a6616101616261786163420102616483fb3ff8000000000000f6f5616522636269671b0000010000000000";
  assert.equal(toHex(codec.encode(value)[0]), hex);
  assert.deepEqual(codec.decode(fromHex(hex), []), value);
});

test("CBOR: a half becomes tag 24945 holding its attachment index, and back", () => {
  const [tx] = channel<number>();
  const [payload, halves] = codec.encode({ tx, n: 7 });
  assert.equal(toHex(payload), "a2627478d9617100616e07");
  assert.deepEqual(halves, [tx]);
  const [other] = channel<number>();
  assert.deepEqual(codec.decode(payload, [other]), { tx: other, n: 7 });
  assert.throws(() => codec.decode(payload, []), /out of range/);
  assert.throws(() => codec.decode(fromHex("82d9617100d9617100"), [other]), /used twice/);
  assert.throws(() => codec.encode([tx, tx]), /twice/);
});

test("local channels: values in order, then the end", async () => {
  const [tx, rx] = channel<number>();
  await tx.send(1);
  await tx.send(2);
  tx.finish();
  const got: number[] = [];
  for await (const v of rx) got.push(v);
  assert.deepEqual(got, [1, 2]);
  await assert.rejects(rx.recv(), ChannelFinished);
});

const msg = (channel: number, number: number, value: unknown, attachments: number[] = []): Frame => ({
  type: "Message", channel: BigInt(channel), number: BigInt(number), attachments: attachments.map(BigInt),
  payload: codec.encode(value)[0],
});

test("a receiver sent in a message gets the server's stream on it", async () => {
  const s = new Scripted();
  await s.conn.ready;
  const [tx, rx] = channel<{ tick: number }>();
  await s.conn.entrypoint.send({ subscribe: tx } as never);
  const [sent] = s.written(2);
  assert.ok(sent && sent.type === "Message");
  assert.deepEqual(sent.attachments, [1n]); // a sender for the server: client-minted, to the client, index 0
  const stand = new Sender(null, false);
  assert.deepEqual(codec.decode(sent.payload, [stand]), { subscribe: stand });
  s.peer(1, [{ type: "ChannelControl", channel: 1n }]);
  s.peer(3, [msg(1, 0, { tick: 1 }), msg(1, 1, { tick: 2 })]);
  s.peer(1, [{ type: "FinishSender", reliableCount: 2n }], true);
  const got: number[] = [];
  for await (const m of rx) got.push(m.tick);
  assert.deepEqual(got, [1, 2]);
  assert.deepEqual(s.written(1).map((f) => f.type), ["AckNackUnreliable", "CloseReceiver"]);
});

test("a sender the server attaches is usable at once; its end reaches the page", async () => {
  const s = new Scripted();
  const [tx, rx] = channel<{ reply: Sender<string> }>();
  await s.conn.entrypoint.send({ hello: tx } as never);
  s.written(2);
  s.peer(3, [msg(1, 0, { reply: new Sender(null, false) }, [2])].map((f) => ({ ...f, payload: fromHex("a1657265706c79d9617100") })));
  const { reply } = await rx.recv();
  await reply.send("hi");
  assert.deepEqual(s.written(4).map((f) => f.type), ["ChannelControl"]);
  const [m] = s.written(6);
  assert.ok(m && m.type === "Message" && m.channel === 2n);
  assert.equal(codec.decode(m.payload, []), "hi");
  s.peer(4, [{ type: "CloseReceiver", ranges: [1n] }], true);
  assert.equal(await reply.ended(), "receiver dropped");
  await assert.rejects(reply.send("again"), ReceiverDropped);
});

test("request: the reply arrives on the oneshot; a timeout closes the reply receiver", async () => {
  const s = new Scripted();
  const answer = request<unknown, number>(s.conn.entrypoint, (reply) => ({ ask: 1, reply }));
  const [m] = s.written(2);
  assert.ok(m && m.type === "Message");
  assert.deepEqual(m.attachments, [5n]); // oneshot, to the client, client-minted, index 0
  s.peer(1, [{ type: "ChannelControl", channel: 5n }]);
  s.peer(3, [msg(5, 0, 42)], true);
  s.peer(1, [{ type: "FinishSender", reliableCount: 1n }], true);
  assert.equal(await answer, 42);

  const late = request<unknown, number>(s.conn.entrypoint, (reply) => ({ ask: 2, reply }), { timeout: 5 });
  await assert.rejects(late, Timeout);
  s.peer(5, [{ type: "ChannelControl", channel: 13n }]);
  assert.deepEqual(s.written(5).map((f) => f.type), ["CloseReceiver"]);
});

test("a message lost in transit loses the channel it carried", async () => {
  const s = new Scripted();
  const [tx, rx] = channel<number>();
  await s.conn.entrypoint.send({ feed: rx } as never);
  await tx.send(1);
  s.peer(1, [{ type: "ChannelControl", channel: 0n }, { type: "CloseReceiver", ranges: [0n, 1n] }]);
  await assert.rejects(tx.send(2), ChannelLost);
});

test("the connection's end ends every half", async () => {
  const s = new Scripted();
  const [, rx] = channel<number>();
  await s.conn.entrypoint.send({ feed: rx } as never);
  s.conn.deliver({ type: "closed", code: 0, reason: "bye" });
  const info = await s.conn.whenClosed;
  assert.deepEqual(info, { code: 0, reason: "bye", byPeer: true });
});

test("the ghost filter of handed-out channels is bounded (the oldest are forgotten)", async () => {
  const s = new Scripted(); // (a fresh engine per test: the bound is the engine's config)
  const engine = (s.conn as unknown as { engine: import("../src/engine/index.js").Engine }).engine;
  (engine.config as { maxHandedOut: number }).maxHandedOut = 3;
  const [tx, rx] = channel<unknown>();
  await s.conn.entrypoint.send({ sink: tx } as never); // channel 1: the server's sender, our receiver
  // the server hands us 5 receivers (its channels 3, 11, 19, 27, 35), one per message
  s.peer(3, [0, 1, 2, 3, 4].map((i) => msg(1, i, null, [8 * i + 3])));
  for (let i = 0; i < 5; i++) await rx.recv();
  assert.equal(engine.stateSizes().handedOut, 3);
});

test("send waits while the transport has no room on its stream (backpressure), sendNow does not", async () => {
  const s = new Scripted();
  let release!: () => void;
  const room = new Promise<void>((resolve) => (release = resolve));
  const asked: number[] = [];
  (s as unknown as { drained: (sid: number) => Promise<void> }).drained = (sid) => {
    asked.push(sid);
    return room;
  };
  let sent = false;
  const sending = s.conn.entrypoint.send({ n: 1 } as never).then(() => (sent = true));
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(sent, false);
  assert.deepEqual(asked, [2]); // the entrypoint's ordered stream
  assert.equal(s.conn.entrypoint.sendNow({ n: 2 } as never), 2);
  release();
  await sending;
  assert.equal(sent, true);
  assert.equal(s.written(2).length, 2);
});

const closeCommands = (s: Scripted): unknown[] => s.commands.filter((c) => c.type === "close");
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test("a graceful close finishes the entrypoint and waits for the server to end it, then closes (QUIC-11)", async () => {
  const s = new Scripted();
  await s.conn.ready;
  await s.conn.entrypoint.send({ n: 1 } as never);
  assert.equal(s.written(2).length, 1);
  let done = false;
  const closing = s.conn.close().then(() => (done = true));
  await turn();
  // the entrypoint's message stream is finished; its FinishSender waits for the control stream the server opens
  assert.ok(s.commands.some((c) => c.type === "send" && c.streamId === 2 && c.end));
  s.peer(1, [{ type: "ChannelControl", channel: 0n }]);
  assert.deepEqual(s.written(1), [{ type: "FinishSender", reliableCount: 1n }]);
  await turn();
  assert.deepEqual(closeCommands(s), []); // the server has not ended the entrypoint yet: no close
  assert.equal(done, false);
  s.peer(1, [{ type: "CloseReceiver", ranges: [1n] }]); // it got message 0 and ended its receiver
  await closing;
  assert.equal(s.conn.entrypoint.status(), "finished");
  assert.deepEqual(closeCommands(s), [{ type: "close", code: 0, reason: "" }]);
});

test("a graceful close waits for a silent server only up to its timeout; a non-zero code does not wait", async () => {
  const silent = new Scripted();
  await silent.conn.ready;
  await silent.conn.close(0, "bye", 1);
  assert.deepEqual(closeCommands(silent), [{ type: "close", code: 0, reason: "bye" }]);
  const abrupt = new Scripted();
  await abrupt.conn.ready;
  const closing = abrupt.conn.close(9, "error");
  assert.deepEqual(closeCommands(abrupt), [{ type: "close", code: 9, reason: "error" }]); // at once
  assert.ok(!abrupt.commands.some((c) => c.type === "send" && c.end)); // the entrypoint was not finished
  await closing;
});
