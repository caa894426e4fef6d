/**
 * Channel halves: {@link Sender} and {@link Receiver}, made in pairs by {@link channel} and {@link oneshot}
 * (as Python's aqueduct.channel), or arriving inside messages.
 *
 * Theory of operation. A pair starts local: a pipe between the two halves, usable in one page. Sending one half
 * inside a message on a connection moves it to the peer: the engine mints the channel and creates the half we
 * keep, and the partner left here is bound to that engine half (values already sent on a local sender go out
 * first, in order; values already in a local pipe stay first for its receiver). A half that arrives in a message
 * is bound from the start. A half that was sent away is "moved": using it throws ChannelClosed. A bound half
 * cannot travel in a message again (forwarding across connections is the Python library's, not this client's).
 * @module
 */
import { ChannelClosed, ChannelFinished, ConnectionLost, errorForReason, Timeout } from "../errors.js";
import type { Delivery, EndReason } from "../engine/types.js";

/** What a bound half asks of its connection (api/connection.ts implements it). */
export interface Link {
  /** Encode and send; returns the stream written (null: a datagram). */
  sendValue(sender: Sender<unknown>, handle: number, value: unknown, delivery: Delivery): number | null;
  /** Resolves once the transport has room on a stream again (its queued writes fell under its high-water mark). */
  drained(streamId: number): Promise<void>;
  finish(handle: number): void;
  cancel(handle: number): void;
  closeReceiver(handle: number): void;
  /** The next message of a receiver, decoded ([true, value]), or [false] if none is queued. */
  take(handle: number): [true, unknown] | [false];
  senderStatus(handle: number): EndReason | null;
  receiverStatus(handle: number): EndReason | null;
  /** Resolves at the next change for this handle (a message, its end, the connection's end). */
  changed(handle: number): Promise<void>;
  readonly closed: boolean;
}

interface Bound {
  link: Link;
  handle: number;
}

/** The local pipe of a pair, until (and, for what it holds, after) one half moves. */
class Pipe {
  values: unknown[] = [];
  ended: EndReason | null = null;
  private waiters: Array<() => void> = [];
  wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** Either half of a channel. */
export abstract class Half {
  /** @internal */ net: Bound | null = null;
  /** @internal */ moved = false;
  /** @internal */ pipe: Pipe | null;
  /** @internal */ partner: Half | null = null;
  /** Whether the channel carries exactly one message. */
  readonly oneshot: boolean;
  protected constructor(pipe: Pipe | null, oneshot: boolean) {
    this.pipe = pipe;
    this.oneshot = oneshot;
  }
  /** @internal The half arrived in a message the application will never see: end it. */
  abstract discard(): void;
  protected checkUsable(): void {
    if (this.moved) throw new ChannelClosed("this half was sent away in a message");
  }
}

/** Options of a send. */
export interface SendOptions {
  /** How this message travels; default: the sender's (ordered unless `channel({ delivery })` said otherwise). */
  delivery?: Delivery;
}

/** The sending half of a channel of `T`. */
export class Sender<T> extends Half {
  /** How messages travel unless a send says otherwise. */
  delivery: Delivery;
  private finishedLocally = false;

  /** @internal */
  constructor(pipe: Pipe | null, oneshot: boolean, delivery: Delivery = "ordered") {
    super(pipe, oneshot);
    this.delivery = delivery;
  }

  /** @internal A sender bound to an engine half from the start (it arrived in a message, or is an entrypoint). */
  static bound<T>(link: Link, handle: number, oneshot: boolean): Sender<T> {
    const s = new Sender<T>(null, oneshot);
    s.net = { link, handle };
    return s;
  }

  /** Send `value` (halves inside it travel too); resolves when the transport has room for more (backpressure).
   * Throws the channel's end as an error once it ended. */
  async send(value: T, options: SendOptions = {}): Promise<void> {
    const streamId = this.sendNow(value, options);
    if (streamId !== null && this.net) await this.net.link.drained(streamId);
  }

  /** Send without waiting for room (what `send` does first; its errors are thrown here). Returns the stream
   * written, or null (a datagram, or a local channel). */
  sendNow(value: T, options: SendOptions = {}): number | null {
    this.checkUsable();
    const delivery = options.delivery ?? this.delivery;
    if (this.net) return this.net.link.sendValue(this as Sender<unknown>, this.net.handle, value, delivery);
    const pipe = this.pipe!;
    if (this.finishedLocally) throw new ChannelClosed("the sender was finished or cancelled");
    if (pipe.ended) throw errorForReason(pipe.ended === "closed" ? "receiver dropped" : pipe.ended, "channel");
    pipe.values.push(value);
    pipe.wake();
    if (this.oneshot) this.finish();
    return null;
  }

  /** Gracefully end the channel: the receiver gets every message sent, then the end. */
  finish(): void {
    this.checkUsable();
    if (this.net) return this.net.link.finish(this.net.handle);
    if (this.finishedLocally) return;
    this.finishedLocally = true;
    const pipe = this.pipe!;
    if (!pipe.ended) pipe.ended = "finished";
    pipe.wake();
  }

  /** Abruptly end the channel: messages not yet taken are discarded. */
  cancel(): void {
    this.checkUsable();
    if (this.net) return this.net.link.cancel(this.net.handle);
    this.finishedLocally = true;
    const pipe = this.pipe!;
    if (!pipe.ended) {
      pipe.ended = "cancelled";
      pipe.values = [];
    }
    pipe.wake();
  }

  /** Null while the channel is open, else why this sender ended. */
  status(): EndReason | null {
    if (this.net) return this.net.link.senderStatus(this.net.handle);
    return this.pipe?.ended ?? null;
  }

  /** Resolves with the reason once this sender ended (the receiver dropped it, it finished, ...). */
  async ended(): Promise<EndReason> {
    for (;;) {
      const status = this.status();
      if (status !== null) return status;
      if (this.net) await this.net.link.changed(this.net.handle);
      else await this.pipe!.changed();
    }
  }

  /** @internal */
  discard(): void {
    if (this.net && !this.net.link.closed && this.status() === null) this.net.link.cancel(this.net.handle);
  }

  /** @internal Bind to the engine sender the connection created for this half's partner, sending what waited. */
  bind(link: Link, handle: number): void {
    const pipe = this.pipe;
    this.net = { link, handle };
    this.pipe = null;
    if (pipe) {
      for (const v of pipe.values) link.sendValue(this as Sender<unknown>, handle, v, this.delivery);
      if (pipe.ended === "finished") link.finish(handle);
      else if (pipe.ended === "cancelled") link.cancel(handle);
    }
  }
}

/** Options of a receive. */
export interface RecvOptions {
  /** Give up after this many milliseconds (Timeout). */
  timeout?: number;
}

/** The receiving half of a channel of `T`: `await rx.recv()` or `for await (const m of rx)`. */
export class Receiver<T> extends Half implements AsyncIterable<T> {
  private closedLocally = false;

  /** @internal */
  constructor(pipe: Pipe | null, oneshot: boolean) {
    super(pipe, oneshot);
  }

  /** @internal */
  static bound<T>(link: Link, handle: number, oneshot: boolean): Receiver<T> {
    const r = new Receiver<T>(null, oneshot);
    r.net = { link, handle };
    return r;
  }

  /** The next message; throws ChannelFinished after the last one, or the channel's end as an error. */
  async recv(options: RecvOptions = {}): Promise<T> {
    this.checkUsable();
    if (this.closedLocally) throw new ChannelClosed("the receiver was closed");
    let timer: ReturnType<typeof setTimeout> | undefined;
    let expired = false;
    const deadline = options.timeout === undefined ? null : new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        expired = true;
        resolve();
      }, options.timeout);
    });
    try {
      for (;;) {
        const pipe = this.pipe;
        if (pipe && pipe.values.length) return pipe.values.shift() as T;
        if (this.net) {
          const got = this.net.link.take(this.net.handle);
          if (got[0]) return got[1] as T;
          const status = this.net.link.receiverStatus(this.net.handle);
          if (status !== null) throw errorForReason(status, "channel");
          if (this.net.link.closed) throw new ConnectionLost();
          const change = this.net.link.changed(this.net.handle);
          await (deadline ? Promise.race([change, deadline]) : change);
        } else {
          if (pipe!.ended) throw errorForReason(pipe!.ended, "channel");
          await (deadline ? Promise.race([pipe!.changed(), deadline]) : pipe!.changed());
        }
        if (expired) throw new Timeout(`no message within ${options.timeout} ms`);
      }
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  /** Iterate until the channel finishes (other ends throw). */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      try {
        yield await this.recv();
      } catch (err) {
        if (err instanceof ChannelFinished) return;
        throw err;
      }
    }
  }

  /** Stop receiving: queued messages are dropped and the sender sees the receiver dropped. */
  close(): void {
    if (this.moved || this.closedLocally) return;
    this.closedLocally = true;
    if (this.net) {
      if (!this.net.link.closed && this.net.link.receiverStatus(this.net.handle) === null) this.net.link.closeReceiver(this.net.handle);
      return;
    }
    const pipe = this.pipe!;
    pipe.values = [];
    if (!pipe.ended) pipe.ended = "closed";
    pipe.wake();
  }

  /** Null while the channel is open, else why it ended. */
  status(): EndReason | null {
    if (this.net) return this.net.link.receiverStatus(this.net.handle);
    return this.pipe?.ended ?? null;
  }

  /** @internal */
  discard(): void {
    this.close();
  }

  /** @internal Bind to the engine receiver the connection created for this half's partner. */
  bind(link: Link, handle: number): void {
    this.net = { link, handle };
    if (this.pipe && this.pipe.values.length === 0) this.pipe = null;
  }
}

/** Options of a new channel. */
export interface ChannelOptions {
  /** How its messages travel: "ordered" (default), "unordered" or "unreliable". */
  delivery?: Delivery;
}

/** A new channel of `T`: its sender and receiver. Send either half in a message to hand it to the peer. */
export function channel<T>(options: ChannelOptions = {}): [Sender<T>, Receiver<T>] {
  const pipe = new Pipe();
  const tx = new Sender<T>(pipe, false, options.delivery);
  const rx = new Receiver<T>(pipe, false);
  tx.partner = rx;
  rx.partner = tx;
  return [tx, rx];
}

/** A new channel carrying exactly one message (a reply): its sender and receiver. */
export function oneshot<T>(): [Sender<T>, Receiver<T>] {
  const pipe = new Pipe();
  const tx = new Sender<T>(pipe, true);
  const rx = new Receiver<T>(pipe, true);
  tx.partner = rx;
  rx.partner = tx;
  return [tx, rx];
}
