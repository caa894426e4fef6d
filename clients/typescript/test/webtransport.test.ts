// The WebTransport adapter against a fake session built from node's web streams (the browser test in
// tests/browser/ runs it against Chromium and the Python server): the first bidi stream the client opens is the
// connection control stream, streams and datagrams carry the engine's frames both ways, resets carry the engine's
// code as streamErrorCode, the server's streams are numbered by kind in arrival order, and the session's close is
// the connection's.
import assert from "node:assert/strict";
import { test } from "node:test";

import { channel, connect } from "../src/index.js";
import { CborCodec } from "../src/api/codec.js";
import { decodeFrames, encodeFrames, PROTOCOL_VERSION, type Frame } from "../src/wire/index.js";

const codec = new CborCodec();

/** What the client wrote on one of its streams, and how that stream ended. */
class Sink {
  chunks: Uint8Array[] = [];
  closed = false;
  abortCode: number | null = null;
  readonly writable = new WritableStream<Uint8Array>({
    write: (chunk) => void this.chunks.push(chunk),
    close: () => void (this.closed = true),
    abort: (reason: { streamErrorCode?: number }) => void (this.abortCode = reason?.streamErrorCode ?? -1),
  });
  frames(): Frame[] {
    const all = Uint8Array.from(this.chunks.flatMap((c) => [...c]));
    return all.length ? decodeFrames(all) : [];
  }
}

/** A readable the server writes into. */
class Source {
  controller!: ReadableStreamDefaultController<Uint8Array>;
  readonly readable = new ReadableStream<Uint8Array>({ start: (c) => void (this.controller = c) });
  send(frames: Frame[]): void {
    this.controller.enqueue(encodeFrames(frames));
  }
}

class FakeSession {
  static last: FakeSession;
  readonly ready = Promise.resolve();
  readonly clientBidi: Array<{ sink: Sink; source: Source }> = [];
  readonly clientUni: Sink[] = [];
  closeInfo: { closeCode: number; reason: string } | null = null;
  private resolveClosed!: (info: { closeCode: number; reason: string }) => void;
  readonly closed = new Promise<{ closeCode: number; reason: string }>((r) => (this.resolveClosed = r));
  private bidiIn!: ReadableStreamDefaultController<unknown>;
  private uniIn!: ReadableStreamDefaultController<unknown>;
  private datagramIn!: ReadableStreamDefaultController<Uint8Array>;
  readonly incomingBidirectionalStreams = new ReadableStream({ start: (c) => void (this.bidiIn = c) });
  readonly incomingUnidirectionalStreams = new ReadableStream({ start: (c) => void (this.uniIn = c) });
  readonly datagramsOut: Uint8Array[] = [];
  readonly datagrams = {
    maxDatagramSize: 1200,
    readable: new ReadableStream<Uint8Array>({ start: (c) => void (this.datagramIn = c) }),
    writable: new WritableStream<Uint8Array>({ write: (d) => void this.datagramsOut.push(d) }),
  };
  constructor(readonly url: string, readonly options: unknown) {
    FakeSession.last = this;
  }
  async createBidirectionalStream(): Promise<{ readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }> {
    const pair = { sink: new Sink(), source: new Source() };
    this.clientBidi.push(pair);
    return { readable: pair.source.readable, writable: pair.sink.writable };
  }
  async createUnidirectionalStream(): Promise<WritableStream<Uint8Array>> {
    const sink = new Sink();
    this.clientUni.push(sink);
    return sink.writable;
  }
  close(info: { closeCode: number; reason: string }): void {
    this.closeInfo = info;
    this.resolveClosed(info);
  }
  // the server's side
  openBidi(): { sink: Sink; source: Source } {
    const pair = { sink: new Sink(), source: new Source() };
    this.bidiIn.enqueue({ readable: pair.source.readable, writable: pair.sink.writable });
    return pair;
  }
  openUni(): Source {
    const source = new Source();
    this.uniIn.enqueue(source.readable);
    return source;
  }
  datagram(frames: Frame[]): void {
    this.datagramIn.enqueue(encodeFrames(frames));
  }
  closeFromServer(closeCode: number, reason: string): void {
    this.resolveClosed({ closeCode, reason });
  }
}

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));
const hello: Frame[] = [{ type: "Version", version: PROTOCOL_VERSION }, { type: "ConnectionControl", headers: [] }];
const msg = (channel: number, number: number, value: unknown): Frame => ({
  type: "Message", channel: BigInt(channel), number: BigInt(number), attachments: [], payload: codec.encode(value)[0],
});

test("over a WebTransport session: control stream first, frames both ways, resets, datagrams, the close", async () => {
  const hashes = [{ algorithm: "sha-256" as const, value: new Uint8Array(32) }];
  const connecting = connect("https://127.0.0.1:4433/aqueduct", {
    serverCertificateHashes: hashes, WebTransport: FakeSession as never, timeout: 2000,
  });
  await settle();
  const session = FakeSession.last;
  assert.deepEqual(session.options, { serverCertificateHashes: hashes });
  const control = session.clientBidi[0]!;
  const [version, headers] = control.sink.frames();
  assert.equal(version?.type, "Version");
  assert.ok(headers?.type === "ConnectionControl" && headers.headers.some(([k]) => k === "codec"));
  control.source.send(hello);
  const conn = await connecting;

  // a sender handed to the server, which streams back on its own uni stream after opening the control stream
  const [tx, rx] = channel<number>();
  await conn.entrypoint.send({ sink: tx } as never);
  await settle();
  assert.deepEqual(session.clientUni[0]!.frames().map((f) => f.type), ["Message"]);
  const ctrl = session.openBidi(); // the engine's stream 1
  ctrl.source.send([{ type: "ChannelControl", channel: 1n }]);
  const feed = session.openUni(); // the engine's stream 3
  feed.send([msg(1, 0, 10), msg(1, 1, 11)]);
  assert.equal(await rx.recv(), 10);
  assert.equal(await rx.recv(), 11);
  await settle();
  assert.deepEqual(ctrl.sink.frames().map((f) => f.type), ["AckNackUnreliable"]); // the minting side's first frame

  // a cancelled sender resets its message stream with streamErrorCode 1 ("cancelled")
  const [tx2, rx2] = channel<number>();
  await conn.entrypoint.send({ feed: rx2 } as never);
  await tx2.send(1);
  tx2.cancel();
  await settle();
  assert.equal(session.clientUni[1]!.abortCode, 1);

  // datagrams both ways
  const [utx, urx] = channel<number>({ delivery: "unreliable" });
  await conn.entrypoint.send({ sink: utx } as never);
  session.datagram([msg(9, 0, 7)]);
  assert.equal(await urx.recv(), 7);
  const [dtx, drx] = channel<number>({ delivery: "unreliable" });
  await conn.entrypoint.send({ feed: drx } as never);
  await dtx.send(5);
  await settle();
  assert.equal(session.datagramsOut.length, 1);
  assert.deepEqual(decodeFrames(session.datagramsOut[0]!).map((f) => f.type), ["Message"]);

  // the session's close is the connection's
  session.closeFromServer(8, "draining");
  assert.deepEqual(await conn.whenClosed, { code: 8, reason: "draining", byPeer: true });
  await assert.rejects(rx.recv());
});

test("a connection's graceful close finishes the entrypoint, then closes its session with the code and reason", async () => {
  const connecting = connect("https://x/aqueduct", { WebTransport: FakeSession as never });
  await settle();
  const session = FakeSession.last;
  session.clientBidi[0]!.source.send(hello);
  const conn = await connecting;
  const closing = conn.close(0, "bye");
  await settle();
  assert.equal(session.closeInfo, null); // graceful: the entrypoint finishes first, the server ends it
  const ctrl = session.openBidi();
  ctrl.source.send([{ type: "ChannelControl", channel: 0n }]);
  await settle();
  assert.deepEqual(ctrl.sink.frames(), [{ type: "FinishSender", reliableCount: 0n }]);
  ctrl.source.send([{ type: "CloseReceiver", ranges: [] }]);
  await closing;
  assert.deepEqual(session.closeInfo, { closeCode: 0, reason: "bye" });
});

test("one turn's writes to a stream are joined: N sends are one write, the finish rides on it (PERF-36)", async () => {
  const connecting = connect("https://x/aqueduct", { WebTransport: FakeSession as never });
  await settle();
  const session = FakeSession.last;
  const control = session.clientBidi[0]!;
  assert.equal(control.sink.chunks.length, 1); // Version + ConnectionControl: one write
  control.source.send(hello);
  const conn = await connecting;
  const n = 100;
  for (let i = 0; i < n; i++) await conn.entrypoint.send(i as never); // never waits for room: one turn
  await settle();
  const entry = session.clientUni[0]!;
  assert.equal(entry.chunks.length, 1);
  assert.deepEqual(entry.frames().filter((f) => f.type === "Message").map((f) => f.type === "Message" && f.number),
    Array.from({ length: n }, (_, i) => BigInt(i)));
  // a later turn is a write of its own; a channel's last messages and its finish are one write and the FIN
  const [tx, rx] = channel<number>();
  await conn.entrypoint.send({ feed: rx } as never);
  for (let i = 0; i < n; i++) tx.sendNow(i);
  tx.finish();
  await settle();
  assert.equal(entry.chunks.length, 2);
  const feed = session.clientUni[1]!;
  assert.equal(feed.chunks.length, 1);
  assert.equal(feed.closed, true);
  assert.deepEqual(feed.frames().map((f) => f.type), Array(n).fill("Message"));
  // a reset writes what is held first (nothing overtakes), then aborts the stream
  const [tx2, rx2] = channel<number>();
  await conn.entrypoint.send({ feed: rx2 } as never);
  tx2.sendNow(1);
  tx2.cancel();
  await settle();
  const cancelled = session.clientUni[2]!;
  assert.equal(cancelled.chunks.length, 1);
  assert.equal(cancelled.abortCode, 1);
});
