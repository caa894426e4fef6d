// The API over a scripted server: the test plays the server's side of the wire (frames in, frames out) against a
// Connection whose transport records the engine's commands, so channels, attachments both ways, request and the
// CBOR codec are checked without a network. The CBOR bytes are the ones Python's cbor2 writes for the same values.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  CborCodec, ChannelFinished, ChannelLost, Connection, ReceiverDropped, Sender, Timeout, channel, request, type Transport,
} from "../src/index.js";
import { Engine, type TransportCommand } from "../src/engine/index.js";
import { decodeFrames, encodeFrames, PROTOCOL_VERSION, type Frame } from "../src/wire/index.js";
import { fromHex, toHex } from "./frameJson.js";

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

/** A connection whose transport keeps the engine's commands for the test, which plays the server. */
class Scripted implements Transport {
  readonly commands: TransportCommand[] = [];
  clock = 0;
  readonly conn: Connection;
  constructor() {
    this.conn = new Connection(new Engine([["codec", new TextEncoder().encode("cbor-a1d0c7")]]), this, codec);
    this.conn.pump();
    this.peer(0, [{ type: "Version", version: PROTOCOL_VERSION }, { type: "ConnectionControl", headers: [] }]);
  }
  execute(command: TransportCommand): void {
    this.commands.push(command);
  }
  now(): number {
    return this.clock;
  }
  peer(streamId: number, frames: Frame[], end = false): void {
    this.conn.deliver({ type: "stream_data", streamId, data: encodeFrames(frames), end });
  }
  /** The frames written on a stream since the last call, and whether it was finished. */
  written(streamId: number): Frame[] {
    const data = this.commands.filter((c) => c.type === "send" && c.streamId === streamId).map((c) => (c as { data: Uint8Array }).data);
    this.commands.splice(0, this.commands.length, ...this.commands.filter((c) => !(c.type === "send" && c.streamId === streamId)));
    const all = Uint8Array.from(data.flatMap((d) => [...d]));
    return all.length ? decodeFrames(all) : [];
  }
}

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
