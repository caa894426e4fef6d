/**
 * The sans-I/O Aqueduct engine for the client side of one connection (the rules of aqueduct/core/, ported): the
 * facade.
 *
 * Inputs: `handleEvent(event, now)`, `handleTimer(now)` and the application calls (`send`, `finish`, `cancel`,
 * `closeReceiver`, `take`, `dropSender`, `dropReceiver`, `close`). Outputs: `commands()` drains transport
 * commands, `events()` drains application events, `nextDeadline()` says when `handleTimer` is due. It knows
 * nothing of WebTransport or timers: webtransport.ts drives it.
 *
 * This file implements none of the protocol itself: it routes inputs to parts that each own one concern (as
 * aqueduct/core/ is split; context.ts says how they reach each other):
 *   context.ts    the config, clock, RTT, closed; the outputs, the timers, the minter and the creation links
 *   handles.ts    the halves by handle and by channel, the ghost filters
 *   streams.ts    the stream records and our writes
 *   incoming.ts   stream roles, frame routing, stalled streams (flow control)
 *   intake.ts     a Message received, queued for the application
 *   sending.ts    the senders' life (writes, finish, cancel, reports)
 *   receiving.ts  the receivers' life (control stream, acks, close)
 *   loss.ts       cascading loss through the creation links
 *   halves.ts, acks.ts, links.ts: the per-channel records, their ack ledgers, the creation links
 * By the spec's sections (specs/decisions/engine.md, ENG, says where the project chose): startup (stream 0 carries
 * Version + ConnectionControl both ways; the entrypoint sender exists from the start), sending, control streams,
 * acks, finish / cancel / close, flow control, bad input. A ProtocolError raised anywhere below becomes one close
 * here (`guard`): the engine closes the connection with its code and every half ends "connection lost". Ints on the
 * wire beyond 2^53 - 1 close with LIMIT_EXCEEDED.
 * @module
 */
import { ENTRYPOINT } from "../wire/channelId.js";
import { CloseCode, ProtocolError } from "../wire/errors.js";
import { PROTOCOL_VERSION, encodeFrames } from "../wire/frames.js";
import type { Headers } from "../wire/headers.js";
import { ChannelClosed } from "../errors.js";
import type {
  AppEvent, AttachKind, Delivered, Delivery, EndReason, EngineConfig, SendResult, TransportCommand, TransportEvent,
} from "./types.js";
import { Context, type Parts } from "./context.js";
import { StreamTable } from "./streams.js";
import { Intake } from "./intake.js";
import { Handles } from "./handles.js";
import { Incoming } from "./incoming.js";
import { Senders } from "./sending.js";
import { Receivers } from "./receiving.js";
import { Loss } from "./loss.js";

/** One client connection's engine: inputs in, commands and events out (this file's comment lists its parts). */
export class Engine {
  /** The entrypoint sender's handle. */
  readonly entrypoint: number;
  private readonly p: Parts;

  constructor(readonly headers: Headers = [], config: Partial<EngineConfig> = {}) {
    const p = {} as Parts;
    p.ctx = new Context(config);
    p.handles = new Handles(p);
    p.streams = new StreamTable(p);
    p.incoming = new Incoming(p);
    p.intake = new Intake(p);
    p.senders = new Senders(p);
    p.receivers = new Receivers(p);
    p.loss = new Loss(p);
    this.p = p;
    p.streams.records.set(0, p.streams.newRec(0, "connection"));
    p.streams.writeRaw(0, encodeFrames([{ type: "Version", version: PROTOCOL_VERSION }, { type: "ConnectionControl", headers }]), false);
    p.streams.records.get(0)!.outStarted = true;
    this.entrypoint = p.handles.addSender(ENTRYPOINT, true, true).handle;
  }

  get config(): EngineConfig {
    return this.p.ctx.config;
  }
  get rtt(): number {
    return this.p.ctx.rtt;
  }
  /** Whether the connection is over. */
  get closed(): boolean {
    return this.p.ctx.closed;
  }
  /** The server's connection headers (null until they came). */
  get peerHeaders(): Headers | null {
    return this.p.ctx.peerHeaders;
  }
  /** The transport commands to carry out, in order (drains them). */
  commands(): TransportCommand[] {
    if (this.p.streams.owed.size) {
      const owed = [...this.p.streams.owed];
      this.p.streams.owed.clear();
      for (const [sid, frame] of owed) {
        const rec = this.p.streams.records.get(sid);
        if (rec && !rec.outDone) this.p.streams.write(sid, frame);
      }
    }
    const out = this.p.ctx.out;
    this.p.ctx.out = [];
    return out;
  }
  /** The application events, in order (drains them). */
  events(): AppEvent[] {
    const out = this.p.ctx.appEvents;
    this.p.ctx.appEvents = [];
    return out;
  }
  /** When `handleTimer` must next be called (seconds on the caller's clock), or null. */
  nextDeadline(): number | null {
    let min: number | null = null;
    for (const t of this.p.ctx.timers.values()) if (min === null || t < min) min = t;
    return min;
  }
  get now(): number {
    return this.p.ctx.now;
  }
  updateRtt(rtt: number): void {
    this.p.ctx.rtt = rtt;
  }
  /** Send one message on `sender`; `attach` creates new channels (we keep the other half of each). */
  send(sender: number, payload: Uint8Array, delivery: Delivery = "ordered", attach: readonly AttachKind[] = []): SendResult {
    return this.p.senders.send(sender, payload, delivery, attach);
  }
  /** A transport event at time `now` (seconds). */
  handleEvent(event: TransportEvent, now: number): void {
    this.p.ctx.now = now;
    if (this.p.ctx.closed) return;
    this.guard(() => {
      switch (event.type) {
        case "stream_data": return this.p.incoming.onStreamData(event.streamId, event.data, event.end);
        case "stream_reset": return this.p.incoming.onStreamReset(event.streamId, event.code);
        case "datagram": return this.p.incoming.onDatagram(event.data);
        case "closed": return this.teardown(event.code, event.reason, true);
      }
    });
  }
  /** Run the timers due at `now`. */
  handleTimer(now: number): void {
    this.p.ctx.now = now;
    if (this.p.ctx.closed) return;
    this.guard(() => {
      for (const [key, at] of [...this.p.ctx.timers]) {
        if (at > now || this.p.ctx.timers.get(key) !== at) continue;
        this.p.ctx.timers.delete(key);
        const [kind, h] = key.split(":");
        const handle = Number(h);
        if (kind === "su") this.p.senders.sentUnreliableDue(handle);
        else this.p.receivers.receiverDue(handle);
      }
    });
  }
  private guard(work: () => void): void {
    try {
      work();
    } catch (err) {
      if (err instanceof ProtocolError) {
        if (!this.p.ctx.closed) {
          this.p.ctx.out.push({ type: "close", code: err.code, reason: err.message });
          this.teardown(err.code, err.message, false);
        }
        return;
      }
      throw err;
    }
  }
  /** Gracefully finish a sender (FinishSender once its control stream exists). */
  finish(sender: number): void {
    this.p.senders.finishSender(this.p.handles.appSender(sender));
  }
  /** Abruptly cancel a sender (its streams reset "cancelled"). */
  cancel(sender: number): void {
    const s = this.p.handles.appSender(sender);
    if (s.state === "finished" || s.state === "finish_wait") throw new ChannelClosed("cancel after finish");
    this.p.senders.cancelSender(s);
  }
  /** Close a receiver: its queue is discarded, the sender learns by CloseReceiver. */
  closeReceiver(receiver: number): void {
    const r = this.p.handles.appReceiver(receiver);
    this.guard(() => this.p.receivers.closeRx(r, "closed"));
  }
  /** The next queued message of a receiver, or null (its halves are handed to the application now). */
  take(receiver: number): Delivered | null {
    const r = this.p.handles.appReceiver(receiver);
    const q = r.queue.shift();
    if (!q) return null;
    r.queueBytes -= q.delivered.payload.length + this.p.ctx.config.heldItemOverhead;
    if (!this.p.ctx.closed) {
      for (const att of q.delivered.attachments) this.p.receivers.expose(att);
      this.guard(() => this.p.incoming.room(r));
    }
    return q.delivered;
  }
  /** How many messages a receiver holds. */
  queued(receiver: number): number {
    return this.p.handles.receivers.get(receiver)?.queue.length ?? 0;
  }
  /** The application let go of a sender: cancel it unless finished. */
  dropSender(sender: number): void {
    const s = this.p.handles.senders.get(sender);
    if (!s || s.appDropped) return;
    s.appDropped = true;
    if (!this.p.ctx.closed && s.state === "open") this.p.senders.cancelSender(s);
    this.p.senders.maybeForgetSender(s);
  }
  /** The application let go of a receiver: close it. */
  dropReceiver(receiver: number): void {
    const r = this.p.handles.receivers.get(receiver);
    if (!r || r.appDropped) return;
    r.appDropped = true;
    if (!this.p.ctx.closed && r.state !== "gone") this.guard(() => this.p.receivers.closeRx(r, "closed"));
    else this.p.receivers.discardQueues([r], false);
    this.p.receivers.maybeForgetReceiver(r);
  }
  /** Close the connection (code 0: graceful). */
  close(code: number = CloseCode.NO_ERROR, reason = ""): void {
    if (this.p.ctx.closed) return;
    this.p.ctx.out.push({ type: "close", code, reason });
    this.teardown(code, reason, false);
  }
  /** Null while the sender is alive, else why it ended. */
  senderStatus(sender: number): EndReason | null {
    const s = this.p.handles.senders.get(sender);
    if (!s) throw new ChannelClosed(`unknown or dropped sender ${sender}`);
    return s.endReported ? s.endReason : null;
  }
  /** Null while the receiver is alive, else why it ended. */
  receiverStatus(receiver: number): EndReason | null {
    const r = this.p.handles.receivers.get(receiver);
    if (!r) throw new ChannelClosed(`unknown or dropped receiver ${receiver}`);
    return r.endReported ? r.endReason : null;
  }
  /** The channel ID behind a handle. */
  channelOf(handle: number): number | null {
    return this.p.handles.senders.get(handle)?.channel ?? this.p.handles.receivers.get(handle)?.channel ?? null;
  }
  /** Sizes of every per-peer table (the engine is idle when all but `senders` for the entrypoint are 0). */
  stateSizes(): Record<string, number> {
    return {
      senders: this.p.handles.senders.size, receivers: this.p.handles.receivers.size, unclaimed: this.p.handles.unclaimed.size,
      links: this.p.ctx.links.nodes.size, streams: this.p.streams.records.size, timers: this.p.ctx.timers.size, handedOut: this.p.handles.handedOut.size,
      discarded: this.p.handles.discarded.size,
    };
  }
  private teardown(code: number, reason: string, byPeer: boolean): void {
    if (this.p.ctx.closed) return;
    this.p.ctx.closed = true;
    for (const s of this.p.handles.senders.values()) {
      s.deferred = [];
      if (!s.endReported) {
        s.state = "gone";
        s.endReason = "connection lost";
        s.endReported = true;
        if (s.exposed && !s.appDropped) this.p.ctx.appEvents.push({ type: "sender_ended", sender: s.handle, reason: "connection lost" });
      }
    }
    for (const r of this.p.handles.receivers.values()) {
      if (r.endReason !== "finished") {
        r.queue = [];
        r.queueBytes = 0;
      }
      if (!r.endReported) {
        r.state = "gone";
        r.endReason = "connection lost";
        r.endReported = true;
        if (r.exposed && !r.appDropped) this.p.ctx.appEvents.push({ type: "receiver_ended", receiver: r.handle, reason: "connection lost" });
      }
    }
    this.p.ctx.timers.clear();
    this.p.ctx.links.clear();
    this.p.streams.records.clear();
    this.p.streams.owed.clear();
    this.p.handles.unclaimed.clear();
    this.p.ctx.appEvents.push({ type: "connection_closed", code, reason, byPeer });
  }
}
