/**
 * A connection: the engine, the transport that carries its commands, the codec, and the halves bound to it
 * (as Python's api/connection.py and api/link.py, in one small class).
 *
 * Theory of operation. Everything runs in the page's one thread: a transport event or an application call runs
 * the engine synchronously, then `pump` drains the engine's commands into the transport and its events into the
 * waiting halves, and re-arms the one timer at the engine's next deadline. Halves never touch the engine: they
 * call the {@link Link} methods here, which encode and decode with the codec and bind the partners of halves
 * that travel in messages.
 * @module
 */
import { Engine } from "../engine/engine.js";
import type { AttachKind, Delivery, EndReason, TransportCommand, TransportEvent } from "../engine/types.js";
import { AqueductError, ChannelClosed, ConnectionLost } from "../errors.js";
import { isOneshot } from "../wire/channelId.js";
import { CloseCode } from "../wire/errors.js";
import type { Headers } from "../wire/headers.js";
import { DEFAULT_CODEC, type Codec } from "./codec.js";
import { Receiver, Sender, type Half, type Link } from "./halves.js";

/** What carries the engine's commands (webtransport.ts; tests use a scripted one). */
export interface Transport {
  /** Carry out one command of the engine. */
  execute(command: TransportCommand): void;
  /** The transport's clock, in seconds. */
  now(): number;
  /** Resolves once a stream's queued writes fell under the transport's high-water mark (absent: never waits). */
  drained?(streamId: number): Promise<void>;
}

/** How a connection ended. */
export interface CloseInfo {
  code: number;
  reason: string;
  byPeer: boolean;
}

/** One Aqueduct connection; `entrypoint` sends to the server's entrypoint (or service). */
export class Connection<T = unknown> implements Link {
  /** The sender of the connection's entrypoint channel. */
  readonly entrypoint: Sender<T>;
  /** Resolves with the server's connection headers. */
  readonly ready: Promise<Headers>;
  /** Resolves when the connection is over. */
  readonly whenClosed: Promise<CloseInfo>;
  private closeInfo: CloseInfo | null = null;
  private readonly waiters = new Map<number, Array<() => void>>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerAt: number | null = null;
  private resolveReady!: (h: Headers) => void;
  private rejectReady!: (e: Error) => void;
  private resolveClosed!: (c: CloseInfo) => void;
  /** Halves the application let go of (garbage collected) are dropped in the engine, as Python's are on `__del__`:
   * a sender cancels unless it finished, a receiver closes, and the engine forgets them once they ended. */
  private readonly finalizer = new FinalizationRegistry<{ handle: number; sender: boolean }>((held) => this.collected(held));

  constructor(readonly engine: Engine, private readonly transport: Transport, readonly codec: Codec = DEFAULT_CODEC) {
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => undefined);
    this.whenClosed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    this.entrypoint = Sender.bound<T>(this, engine.entrypoint, false);
  }

  /** Whether the connection is over. */
  get closed(): boolean {
    return this.engine.closed;
  }

  /** The server's connection headers (null until they came). */
  get peerHeaders(): Headers | null {
    return this.engine.peerHeaders;
  }

  /**
   * Close the connection (every open channel ends with ConnectionLost). A graceful close (code 0, the default)
   * first finishes the entrypoint sender and waits, up to `timeout` milliseconds (default 5000, as Python's
   * `Connection.close`), until the server has everything, so the server's `async for` over the entrypoint ends
   * cleanly instead of raising ConnectionLost (decision QUIC-11). A silent server only delays the close.
   */
  async close(code: number = CloseCode.NO_ERROR, reason = "", timeout = 5000): Promise<void> {
    if (code === CloseCode.NO_ERROR && !this.engine.closed && this.engine.peerHeaders !== null
      && this.engine.senderStatus(this.engine.entrypoint) === null) {
      await this.finishEntrypoint(timeout);
    }
    if (this.engine.closed) return;
    this.engine.close(code, reason);
    this.pump();
  }

  /** Finish the entrypoint (unless it is already finishing) and wait, bounded, for the server to end it. */
  private async finishEntrypoint(timeout: number): Promise<void> {
    try {
      this.engine.finish(this.engine.entrypoint);
    } catch {
      return; // (cancelled meanwhile: nothing to finish)
    }
    this.pump();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeout);
    });
    try {
      await Promise.race([this.entrypoint.ended(), bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A transport event (the adapter's one way in). */
  deliver(event: TransportEvent): void {
    this.engine.handleEvent(event, this.transport.now());
    this.pump();
  }

  /** Drain the engine: commands to the transport, events to the halves; re-arm the timer. */
  pump(): void {
    for (const cmd of this.engine.commands()) this.transport.execute(cmd);
    for (const ev of this.engine.events()) {
      switch (ev.type) {
        case "headers":
          this.resolveReady(ev.headers);
          break;
        case "message_available":
          this.wake(ev.receiver);
          break;
        case "receiver_ended":
          this.wake(ev.receiver);
          break;
        case "sender_ended":
          this.wake(ev.sender);
          break;
        case "connection_closed":
          this.closeInfo = { code: ev.code, reason: ev.reason, byPeer: ev.byPeer };
          this.rejectReady(new ConnectionLost(`connection closed (${ev.code}) ${ev.reason}`, ev.code));
          for (const handle of [...this.waiters.keys()]) this.wake(handle);
          this.resolveClosed(this.closeInfo);
          break;
        default:
          break;
      }
    }
    this.arm();
  }

  private arm(): void {
    const at = this.engine.closed ? null : this.engine.nextDeadline();
    if (at === this.timerAt) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = at;
    if (at === null) return;
    const delay = Math.max(0, (at - this.transport.now()) * 1000);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = null;
      this.engine.handleTimer(this.transport.now());
      this.pump();
    }, delay);
  }

  private wake(handle: number): void {
    const w = this.waiters.get(handle);
    if (!w) return;
    this.waiters.delete(handle);
    for (const f of w) f();
  }

  private collected({ handle, sender }: { handle: number; sender: boolean }): void {
    if (sender) this.engine.dropSender(handle);
    else this.engine.dropReceiver(handle);
    if (!this.engine.closed) this.pump();
  }

  /** @internal A half bound to an engine handle of this connection: dropped in the engine when collected. */
  track(half: Half, handle: number): void {
    this.finalizer.register(half, { handle, sender: half instanceof Sender });
  }

  // ---------------------------------------------------------------- Link (what bound halves call)

  /** @internal */
  changed(handle: number): Promise<void> {
    if (this.engine.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const w = this.waiters.get(handle);
      if (w) w.push(resolve);
      else this.waiters.set(handle, [resolve]);
    });
  }

  /** @internal */
  sendValue(_sender: Sender<unknown>, handle: number, value: unknown, delivery: Delivery): number | null {
    if (this.engine.closed) throw new ConnectionLost();
    const [payload, halves] = this.codec.encode(value);
    const kinds = halves.map((h) => attachKind(h));
    const result = this.engine.send(handle, payload, delivery, kinds);
    halves.forEach((h, i) => {
      h.moved = true;
      const created = result.created[i]!;
      const partner = h.partner;
      if (partner) {
        (partner as Sender<unknown> | Receiver<unknown>).bind(this, created);
        this.track(partner, created);
      }
      else if (h instanceof Sender) this.engine.dropReceiver(created);
      else this.engine.dropSender(created);
    });
    this.pump();
    return result.streamId;
  }

  /** @internal */
  drained(streamId: number): Promise<void> {
    return this.transport.drained ? this.transport.drained(streamId) : Promise.resolve();
  }

  /** @internal */
  finish(handle: number): void {
    this.engine.finish(handle);
    this.pump();
  }

  /** @internal */
  cancel(handle: number): void {
    if (this.engine.senderStatus(handle) === null) this.engine.cancel(handle);
    this.pump();
  }

  /** @internal */
  closeReceiver(handle: number): void {
    this.engine.closeReceiver(handle);
    this.pump();
  }

  /** @internal */
  take(handle: number): [true, unknown] | [false] {
    const d = this.engine.take(handle);
    if (d === null) return [false];
    const halves = d.attachments.map((a) => {
      const half = a.isSender
        ? Sender.bound<unknown>(this, a.handle, isOneshot(a.channel))
        : Receiver.bound<unknown>(this, a.handle, isOneshot(a.channel));
      this.track(half, a.handle);
      return half;
    });
    try {
      return [true, this.codec.decode(d.payload, halves)];
    } finally {
      this.pump();
    }
  }

  /** @internal */
  senderStatus(handle: number): EndReason | null {
    return this.engine.senderStatus(handle);
  }

  /** @internal */
  receiverStatus(handle: number): EndReason | null {
    return this.engine.receiverStatus(handle);
  }
}

function attachKind(h: Half): AttachKind {
  if (h.moved) throw new ChannelClosed("this half was already sent away");
  if (h.net) throw new AqueductError("a half bound to a connection cannot travel in a message (forwarding is not supported by this client)");
  if (h instanceof Sender) return h.oneshot ? "oneshot_sender" : "sender";
  return h.oneshot ? "oneshot_receiver" : "receiver";
}
