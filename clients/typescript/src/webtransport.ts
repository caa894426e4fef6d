/**
 * The WebTransport adapter and `connect` (the browser's `WebTransport` object; specs/decisions/ has
 * the mapping, which the server's aqueduct/quic/webtransport.py implements).
 *
 * Theory of operation. One WebTransport session carries one Aqueduct connection. The engine numbers streams as
 * QUIC does; this layer maps those numbers onto session streams both ways:
 * - streams we open: the engine's client bidi streams 0, 4, 8, ... are created with
 *   `createBidirectionalStream()` in that order (one chain, so the session numbers them in the same order: the
 *   first is the connection control stream), its uni streams 2, 6, ... with `createUnidirectionalStream()`;
 * - streams the server opens get the engine's server numbers in arrival order (bidi 1, 5, ...; uni 3, 7, ...):
 *   the engine relies only on their kind and opener, never on their order;
 * - writes are joined per stream and task (as the Python adapter's quic/writes.py joins a loop turn's, decisions
 *   PERF-36 and TSC-10): the engine's send commands of one task (and the microtasks it runs: a loop of
 *   `await tx.send(...)` that never waits for room) are held per stream and written as one chunk, the FIN riding
 *   on the last, in the next task. A stream write costs the browser a WebTransport write and often a QUIC packet
 *   of its own, so one a message was the client's main cost on both ends. A reset or the close writes what is
 *   held first, so nothing overtakes;
 * - every write of a stream goes through one promise chain, so writes and FINs keep their order; a reset aborts
 *   the writable with `WebTransportError({ streamErrorCode })` (the engine's code, 1 cancelled or 2 lost), and a
 *   reader that fails with a `streamErrorCode` is a reset by the peer;
 * - datagrams go through `datagrams.writable`; the engine's datagram limit is `datagrams.maxDatagramSize`;
 * - flow control: each incoming stream has one read loop, which waits while the engine paused that stream (a
 *   full receiver queue), so the browser stops granting the server credit;
 * - the session's `closed` promise is the connection's end (its code and reason); the engine's close command
 *   closes the session with its code and reason.
 * @module
 */
import { Engine } from "./engine/engine.js";
import type { EngineConfig, TransportCommand, TransportEvent } from "./engine/types.js";
import { ConnectionLost } from "./errors.js";
import type { Headers } from "./wire/headers.js";
import { DEFAULT_CODEC, type Codec } from "./api/codec.js";
import { Connection, type Transport } from "./api/connection.js";

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** SHA-256 hashes of the server's certificate (a self-signed ECDSA certificate valid under 14 days). */
  serverCertificateHashes?: Array<{ algorithm: "sha-256"; value: BufferSource }>;
  /** Connection headers to send (the `codec` header is added). */
  headers?: Headers;
  /** The codec (default: CBOR, as the Python side's default). */
  codec?: Codec;
  /** Engine limits and timings. */
  config?: Partial<EngineConfig>;
  /** Give up connecting after this many milliseconds (default 10000). */
  timeout?: number;
  /** The WebTransport constructor (default: the global one; tests pass their own). */
  WebTransport?: new (url: string, options?: WebTransportOptions) => WebTransport;
}

interface OutStream {
  writer: Promise<WritableStreamDefaultWriter<Uint8Array>>;
  chain: Promise<unknown>;
  /** Bytes handed to this stream and not yet written (held ones included). */
  queued: number;
  /** This turn's writes, not yet handed to the chain (joined by `flush`). */
  held: Uint8Array[];
  /** Whether this turn's writes end the stream. */
  heldEnd: boolean;
  /** Senders waiting for `queued` to fall under the high-water mark. */
  waiting: Array<() => void>;
}

/** Bytes queued on one stream past which `Sender.send` waits (backpressure from the browser's stream). */
export const HIGH_WATER = 1 << 20;

/** Drives one engine over one WebTransport session. */
export class WebTransportAdapter implements Transport {
  private conn: Connection | null = null;
  private readonly out = new Map<number, OutStream>();
  private readonly paused = new Map<number, { resume: Promise<void>; release: () => void }>();
  private bidiChain: Promise<unknown> = Promise.resolve();
  private nextPeerBidi = 1;
  private nextPeerUni = 3;
  private datagramWriter: WritableStreamDefaultWriter<Uint8Array> | null = null;
  private closing = false;
  /** Streams with held writes, in the order of their first write this turn. */
  private readonly holding = new Set<number>();
  private flushScheduled = false;
  private readonly nextTurn = turnScheduler();

  constructor(readonly session: WebTransport) {}

  now(): number {
    return performance.now() / 1000;
  }

  /** Start reading the session into `conn` (the adapter's one connection). */
  attach(conn: Connection): void {
    this.conn = conn;
    void this.acceptLoop(this.session.incomingBidirectionalStreams, true);
    void this.acceptLoop(this.session.incomingUnidirectionalStreams, false);
    void this.datagramLoop();
    this.session.closed.then(
      (info) => this.deliver({ type: "closed", code: info?.closeCode ?? 0, reason: info?.reason ?? "" }),
      (err: unknown) => this.deliver({ type: "closed", code: (err as { closeCode?: number })?.closeCode ?? 0,
        reason: String((err as Error)?.message ?? err) }),
    );
  }

  private deliver(event: TransportEvent): void {
    this.conn?.deliver(event);
  }

  execute(cmd: TransportCommand): void {
    switch (cmd.type) {
      case "send": {
        const s = this.stream(cmd.streamId);
        s.queued += cmd.data.length;
        if (cmd.data.length) s.held.push(cmd.data);
        if (cmd.end) s.heldEnd = true;
        this.holding.add(cmd.streamId);
        if (!this.flushScheduled) {
          this.flushScheduled = true;
          this.nextTurn(() => this.flush());
        }
        return;
      }
      case "reset": {
        const s = this.out.get(cmd.streamId);
        if (!s) return;
        this.flushStream(cmd.streamId, s);
        const code = cmd.code;
        s.chain = s.chain.then(async () => {
          const w = await s.writer;
          await w.abort(streamError(code));
        }).catch(() => undefined);
        return;
      }
      case "datagram":
        if (!this.datagramWriter) this.datagramWriter = this.session.datagrams.writable.getWriter();
        this.datagramWriter.write(cmd.data).catch(() => undefined);
        return;
      case "close":
        if (this.closing) return;
        this.closing = true;
        this.flush();
        try {
          this.session.close({ closeCode: cmd.code, reason: cmd.reason.slice(0, 1000) });
        } catch {
          // (already closed)
        }
        return;
      case "pause": {
        if (this.paused.has(cmd.streamId)) return;
        let release!: () => void;
        const resume = new Promise<void>((r) => (release = r));
        this.paused.set(cmd.streamId, { resume, release });
        return;
      }
      case "resume": {
        const p = this.paused.get(cmd.streamId);
        this.paused.delete(cmd.streamId);
        p?.release();
        return;
      }
    }
  }

  /** Hand every stream's held writes to its chain, joined: one write (and the FIN) per stream. */
  flush(): void {
    this.flushScheduled = false;
    const sids = [...this.holding];
    this.holding.clear();
    for (const sid of sids) {
      const s = this.out.get(sid);
      if (s) this.flushStream(sid, s);
    }
  }

  private flushStream(sid: number, s: OutStream): void {
    this.holding.delete(sid);
    const chunks = s.held;
    const end = s.heldEnd;
    if (!chunks.length && !end) return;
    s.held = [];
    s.heldEnd = false;
    const data = join(chunks);
    s.chain = s.chain.then(async () => {
      const w = await s.writer;
      if (data.length) await w.write(data);
      if (end) await w.close();
    }).catch(() => undefined).finally(() => {
      s.queued -= data.length;
      if (s.queued < HIGH_WATER) for (const wake of s.waiting.splice(0)) wake();
    });
  }

  /** Resolves once the stream's queued writes fell under HIGH_WATER. */
  drained(streamId: number): Promise<void> {
    const s = this.out.get(streamId);
    if (!s || s.queued < HIGH_WATER) return Promise.resolve();
    return new Promise((resolve) => s.waiting.push(resolve));
  }

  /** The writable side of an engine stream, created on its first write. */
  private stream(sid: number): OutStream {
    let s = this.out.get(sid);
    if (s) return s;
    let writer: Promise<WritableStreamDefaultWriter<Uint8Array>>;
    if ((sid & 3) === 0) {
      // our bidi stream: created in engine order; its readable side is read as the engine's stream `sid`
      const created = this.bidiChain.then(() => this.session.createBidirectionalStream());
      this.bidiChain = created.catch(() => undefined);
      writer = created.then((bidi) => {
        void this.readLoop(sid, bidi.readable);
        return bidi.writable.getWriter();
      });
    } else if ((sid & 3) === 2) {
      writer = this.session.createUnidirectionalStream().then((w) => w.getWriter());
    } else {
      throw new Error(`stream ${sid} has no writable side here`);
    }
    writer.catch(() => undefined);
    s = { writer, chain: Promise.resolve(), queued: 0, waiting: [], held: [], heldEnd: false };
    this.out.set(sid, s);
    return s;
  }

  private async acceptLoop(streams: ReadableStream<unknown>, bidi: boolean): Promise<void> {
    const reader = streams.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        if (bidi) {
          const sid = this.nextPeerBidi;
          this.nextPeerBidi += 4;
          const stream = value as WebTransportBidirectionalStream;
          const writer = stream.writable.getWriter();
          const out = { writer: Promise.resolve(writer), chain: Promise.resolve(), queued: 0, waiting: [], held: [], heldEnd: false };
          this.out.set(sid, out);
          void this.readLoop(sid, stream.readable);
        } else {
          const sid = this.nextPeerUni;
          this.nextPeerUni += 4;
          void this.readLoop(sid, value as ReadableStream<Uint8Array>);
        }
      }
    } catch {
      // the session ended: `closed` reports it
    }
  }

  private async readLoop(sid: number, readable: ReadableStream<Uint8Array>): Promise<void> {
    const reader = readable.getReader();
    try {
      for (;;) {
        const paused = this.paused.get(sid);
        if (paused) await paused.resume;
        const { value, done } = await reader.read();
        if (done) {
          this.deliver({ type: "stream_data", streamId: sid, data: new Uint8Array(0), end: true });
          return;
        }
        this.deliver({ type: "stream_data", streamId: sid, data: value, end: false });
      }
    } catch (err) {
      const code = (err as { streamErrorCode?: number | null })?.streamErrorCode;
      if (typeof code === "number") this.deliver({ type: "stream_reset", streamId: sid, code });
    }
  }

  private async datagramLoop(): Promise<void> {
    const reader = this.session.datagrams.readable.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        this.deliver({ type: "datagram", data: value as Uint8Array });
      }
    } catch {
      // the session ended
    }
  }
}

/** One chunk of a turn's writes (no copy for one). */
function join(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  let size = 0;
  for (const c of chunks) size += c.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Run a callback in a task of its own after the current one (and its microtasks): node's `setImmediate`, a
 * `MessageChannel` in a page (a `setTimeout(0)` nested in timers is clamped to 4 ms), else `setTimeout`. */
function turnScheduler(): (callback: () => void) => void {
  const g = globalThis as { setImmediate?: (callback: () => void) => unknown };
  if (typeof g.setImmediate === "function") return (callback) => void g.setImmediate!(callback);
  if (typeof MessageChannel === "function") {
    const channel = new MessageChannel();
    let queue: Array<() => void> = [];
    channel.port1.onmessage = () => {
      const run = queue;
      queue = [];
      for (const callback of run) callback();
    };
    return (callback) => {
      queue.push(callback);
      if (queue.length === 1) channel.port2.postMessage(null);
    };
  }
  return (callback) => void setTimeout(callback, 0);
}

function streamError(code: number): unknown {
  const WTError = (globalThis as unknown as { WebTransportError?: new (message?: string, options?: { streamErrorCode?: number }) => Error })
    .WebTransportError;
  return WTError ? new WTError(`aqueduct reset ${code}`, { streamErrorCode: code }) : { streamErrorCode: code };
}

/**
 * Connect to an Aqueduct server's WebTransport endpoint, e.g. `await connect<Msg>("https://127.0.0.1:4433/aqueduct",
 * { serverCertificateHashes })`. Resolves once the server's connection headers arrived.
 */
export async function connect<T = unknown>(url: string, options: ConnectOptions = {}): Promise<Connection<T>> {
  const WT = options.WebTransport ?? (globalThis as { WebTransport?: ConnectOptions["WebTransport"] }).WebTransport;
  if (!WT) throw new ConnectionLost("this environment has no WebTransport");
  const init: WebTransportOptions = {};
  if (options.serverCertificateHashes) init.serverCertificateHashes = options.serverCertificateHashes;
  const session = new WT(url, init);
  await session.ready;
  const codec = options.codec ?? DEFAULT_CODEC;
  const headers: Headers = [...(options.headers ?? []), ["codec", new TextEncoder().encode(codec.name)]];
  const maxDatagram = session.datagrams?.maxDatagramSize;
  const config: Partial<EngineConfig> = { ...(maxDatagram ? { maxDatagramPayload: maxDatagram } : {}), ...options.config };
  const adapter = new WebTransportAdapter(session);
  const conn = new Connection<T>(new Engine(headers, config), adapter, codec);
  adapter.attach(conn);
  conn.pump();
  const timeout = options.timeout ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      conn.ready,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new ConnectionLost(`no answer from ${url} within ${timeout} ms`)), timeout);
      }),
    ]);
  } catch (err) {
    void conn.close(0, "connect failed");
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return conn;
}
