/**
 * The sans-I/O Aqueduct engine for the client side of one connection (the rules of aqueduct/core/, ported).
 *
 * Inputs: `handleEvent(event, now)`, `handleTimer(now)` and the application calls (`send`, `finish`, `cancel`,
 * `closeReceiver`, `take`, `dropSender`, `dropReceiver`, `close`). Outputs: `commands()` drains transport
 * commands, `events()` drains application events, `nextDeadline()` says when `handleTimer` is due. It knows
 * nothing of WebTransport or timers: webtransport.ts drives it.
 *
 * What it does, by the spec's sections (specs/decisions/engine.md, ENG, says where the project chose):
 * - Startup: stream 0 carries Version + ConnectionControl both ways; until the server's headers came every
 *   stream and datagram we open starts with a Version frame. The entrypoint sender exists from the start.
 * - Sending: ordered = one uni stream per sender; unordered = a uni stream per message (FIN after it);
 *   unreliable = a datagram (own number space), declared by SentUnreliable within min(delay, RTT/2) or when the
 *   control stream attaches. Attachments mint channel IDs and create the half we keep, unreachable, linked
 *   from the message (links.ts).
 * - Control streams: a half for a peer-minted channel opens its control stream at once (ChannelControl); one we
 *   minted waits for the peer's, then owes a first frame (empty AckNackUnreliable / SentUnreliable(0)) if
 *   nothing else was written. A reset of a stream we opened waits until the peer sent a frame on it.
 * - Acks: a receiver acks within ackDelay, nacks unreliable numbers missing at max(nackTimeout, 2 RTT) after
 *   their SentUnreliable, closes with AckNackUnreliable + CloseReceiver + FIN. A sender reports each number
 *   once: acked (held back while unreachable) or nacked; a nack cascades loss through the creation links.
 * - Finish / cancel / close as the spec's procedures; a "lost" reset ends a half at once.
 * - Flow control: a receiver queue is bounded (messages, bytes); a reliable message that finds it full stalls
 *   its stream (PauseStream: the adapter stops reading, so the peer's QUIC window closes) until the
 *   application takes from that queue (ResumeStream). Unreliable messages over the bound are dropped and nacked.
 * - Bad input is a ProtocolError: the engine closes the connection with its code and every half ends
 *   "connection lost". Ints on the wire beyond 2^53 - 1 (never reached by a peer that numbers in order) close
 *   with LIMIT_EXCEEDED.
 * @module
 */
import { ChannelIdMinter, ENTRYPOINT, isOneshot, minterOf, receiverSide, type Side } from "../wire/channelId.js";
import { CloseCode, ProtocolError, ResetCode } from "../wire/errors.js";
import { type Frame, PROTOCOL_VERSION, encodeFrame, encodeFrames, encodeMessage } from "../wire/frames.js";
import type { Headers } from "../wire/headers.js";
import { FrameReader, decodeFrames } from "../wire/reader.js";
import { concat } from "../wire/varint.js";
import { ChannelClosed, ConnectionLost, LimitExceeded, errorForReason } from "../errors.js";
import { type LinkNode, LinkTable, msgKey } from "./links.js";
import { ReceiverRec, SenderRec } from "./halves.js";
import {
  type AppEvent, type AttachKind, type Attachment, DEFAULT_CONFIG, type Delivered, type Delivery, type EndReason,
  type EngineConfig, type SendResult, type TransportCommand, type TransportEvent,
} from "./types.js";

type Role = "connection" | "new_bidi" | "new_uni" | "messages" | "lost_notice" | "to_sender" | "to_receiver";

interface StreamRec {
  id: number;
  role: Role;
  reader: FrameReader;
  /** The half this control stream belongs to (null once it ended). */
  half: number | null;
  framesSeen: number;
  inDone: boolean;
  outStarted: boolean;
  outDone: boolean;
  pendingReset: number | null;
  finalSeen: boolean;
  /** Frames waiting for room in `stalledOn`'s queue, and whether the peer's FIN came after them. */
  stalled: Frame[] | null;
  stalledOn: number | null;
  endAfterStall: boolean;
}

const SIDE: Side = "client";
const VERSION_BYTES = encodeFrame({ type: "Version", version: PROTOCOL_VERSION });
const EMPTY_ACKNACK = encodeFrame({ type: "AckNackUnreliable", ranges: [] });
const SENT_NONE = encodeFrame({ type: "SentUnreliable", count: 0n });
const isUni = (sid: number): boolean => (sid & 2) !== 0;
const openedByUs = (sid: number): boolean => (sid & 1) === 0;

/** A wire int as a JS number (LIMIT_EXCEEDED past 2^53 - 1). */
function safe(v: bigint, what: string): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ProtocolError(`${what} ${v} is beyond 2^53 - 1, the largest this client tracks`, CloseCode.LIMIT_EXCEEDED);
  }
  return Number(v);
}
const safeAll = (vs: bigint[], what: string): number[] => vs.map((v) => safe(v, what));
const bigs = (ns: readonly number[]): bigint[] => ns.map((n) => BigInt(n));

class QueueFull extends Error {
  constructor(readonly receiver: number) {
    super("queue full");
  }
}

export class Engine {
  readonly config: EngineConfig;
  private nowValue = 0;
  rtt: number;
  closed = false;
  peerHeaders: Headers | null = null;
  /** The entrypoint sender's handle. */
  readonly entrypoint: number;

  private out: TransportCommand[] = [];
  private appEvents: AppEvent[] = [];
  private readonly timers = new Map<string, number>();
  private nextHandle = 1;
  private readonly senders = new Map<number, SenderRec>();
  private readonly receivers = new Map<number, ReceiverRec>();
  private readonly txOf = new Map<number, SenderRec>();
  private readonly rxOf = new Map<number, ReceiverRec>();
  /** Auto-created receivers whose creating message has not come, by channel. */
  private readonly unclaimed = new Map<number, ReceiverRec>();
  /** Peer-minted channels whose receiver a message handed out (no ghost for them): the latest `maxHandedOut`. */
  private readonly handedOut = new Set<number>();
  /** Channels whose receiver ended lately (the spec's filter of recently discarded receivers), oldest first. */
  private readonly discarded = new Set<number>();
  private readonly streams = new Map<number, StreamRec>();
  private readonly owed = new Map<number, Uint8Array>();
  private nextBidi = 4;
  private nextUni = 2;
  private needVersion = true;
  private readonly minter = new ChannelIdMinter(SIDE);
  private readonly links = new LinkTable();

  constructor(readonly headers: Headers = [], config: Partial<EngineConfig> = {}) {
    this.config = { ...DEFAULT_CONFIG, ...config };
    this.rtt = this.config.initialRtt;
    this.streams.set(0, this.newRec(0, "connection"));
    this.writeRaw(0, encodeFrames([{ type: "Version", version: PROTOCOL_VERSION }, { type: "ConnectionControl", headers }]), false);
    this.streams.get(0)!.outStarted = true;
    this.entrypoint = this.addSender(ENTRYPOINT, true, true).handle;
  }

  // ---------------------------------------------------------------- outputs

  /** The transport commands to carry out, in order (drains them). */
  commands(): TransportCommand[] {
    if (this.owed.size) {
      const owed = [...this.owed];
      this.owed.clear();
      for (const [sid, frame] of owed) {
        const rec = this.streams.get(sid);
        if (rec && !rec.outDone) this.write(sid, frame);
      }
    }
    const out = this.out;
    this.out = [];
    return out;
  }
  /** The application events, in order (drains them). */
  events(): AppEvent[] {
    const out = this.appEvents;
    this.appEvents = [];
    return out;
  }
  /** When `handleTimer` must next be called (seconds on the caller's clock), or null. */
  nextDeadline(): number | null {
    let min: number | null = null;
    for (const t of this.timers.values()) if (min === null || t < min) min = t;
    return min;
  }
  get now(): number {
    return this.nowValue;
  }
  updateRtt(rtt: number): void {
    this.rtt = rtt;
  }

  // ---------------------------------------------------------------- inputs

  /** A transport event at time `now` (seconds). */
  handleEvent(event: TransportEvent, now: number): void {
    this.nowValue = now;
    if (this.closed) return;
    this.guard(() => {
      switch (event.type) {
        case "stream_data": return this.onStreamData(event.streamId, event.data, event.end);
        case "stream_reset": return this.onStreamReset(event.streamId, event.code);
        case "datagram": return this.onDatagram(event.data);
        case "closed": return this.teardown(event.code, event.reason, true);
      }
    });
  }

  /** Run the timers due at `now`. */
  handleTimer(now: number): void {
    this.nowValue = now;
    if (this.closed) return;
    this.guard(() => {
      for (const [key, at] of [...this.timers]) {
        if (at > now || this.timers.get(key) !== at) continue;
        this.timers.delete(key);
        const [kind, h] = key.split(":");
        const handle = Number(h);
        if (kind === "su") this.sentUnreliableDue(handle);
        else this.receiverDue(handle);
      }
    });
  }

  private guard(work: () => void): void {
    try {
      work();
    } catch (err) {
      if (err instanceof ProtocolError) {
        if (!this.closed) {
          this.out.push({ type: "close", code: err.code, reason: err.message });
          this.teardown(err.code, err.message, false);
        }
        return;
      }
      throw err;
    }
  }

  // ---------------------------------------------------------------- application calls

  /** Send one message on `sender`; `attach` creates new channels (we keep the other half of each). */
  send(sender: number, payload: Uint8Array, delivery: Delivery = "ordered", attach: readonly AttachKind[] = []): SendResult {
    const s = this.appSender(sender);
    if (s.state !== "open") throw this.sendError(s);
    if (payload.length > this.config.maxFrameSize) {
      throw new LimitExceeded(`payload of ${payload.length} bytes exceeds maxFrameSize ${this.config.maxFrameSize}`);
    }
    if (attach.length && this.senders.size + this.receivers.size + attach.length > this.config.maxChannels) {
      throw new LimitExceeded(`more than maxChannels=${this.config.maxChannels} channels`);
    }
    const reliable = delivery !== "unreliable";
    const number = reliable ? s.nextRel : s.nextUnrel;
    const saved = this.minter.save();
    const ids = attach.map((k) => {
      const givesSender = k === "sender" || k === "oneshot_sender";
      return this.minter.mint(givesSender ? SIDE : "server", k.startsWith("oneshot"));
    });
    let data = encodeMessage(s.channel, number, ids, payload);
    if (!reliable) {
      if (this.needVersion) data = concat([VERSION_BYTES, data]);
      if (data.length > this.config.maxDatagramPayload) {
        this.minter.restore(saved);
        throw new LimitExceeded(`unreliable message encodes to ${data.length} bytes, over maxDatagramPayload ${this.config.maxDatagramPayload}`);
      }
    }
    const created = ids.map((id, i) => {
      const k = attach[i]!;
      const givesSender = k === "sender" || k === "oneshot_sender";
      const h = givesSender ? this.addReceiver(id, true, true).handle : this.addSender(id, false, true).handle;
      this.links.addUnreachable(h, id, !givesSender);
      return h;
    });
    if (created.length) this.links.addLink(s.handle, s.channel, msgKey(reliable, number), created);
    let sid: number | null = null;
    if (delivery === "ordered") {
      if (s.orderedSid === null) sid = s.orderedSid = this.openUni(data, false);
      else {
        sid = s.orderedSid;
        this.writeRaw(sid, data, false);
      }
      s.nextRel += 1;
    } else if (delivery === "unordered") {
      sid = this.openUni(data, true);
      s.unorderedSids.set(number, sid);
      s.nextRel += 1;
    } else {
      this.out.push({ type: "datagram", data });
      s.nextUnrel += 1;
      s.undeclared += 1;
      if (s.ctrl !== null) {
        const at = this.nowValue + Math.min(this.rtt / 2, this.config.sentUnreliableDelay);
        const key = `su:${s.handle}`;
        const cur = this.timers.get(key);
        if (cur === undefined || at < cur) this.timers.set(key, at);
      }
    }
    if (s.oneshot) this.finishSender(s);
    return { number, created, streamId: sid };
  }

  /** Gracefully finish a sender (FinishSender once its control stream exists). */
  finish(sender: number): void {
    this.finishSender(this.appSender(sender));
  }
  /** Abruptly cancel a sender (its streams reset "cancelled"). */
  cancel(sender: number): void {
    const s = this.appSender(sender);
    if (s.state === "finished" || s.state === "finish_wait") throw new ChannelClosed("cancel after finish");
    this.cancelSender(s);
  }
  /** Close a receiver: its queue is discarded, the sender learns by CloseReceiver. */
  closeReceiver(receiver: number): void {
    const r = this.appReceiver(receiver);
    this.guard(() => this.closeRx(r, "closed"));
  }
  /** The next queued message of a receiver, or null (its halves are handed to the application now). */
  take(receiver: number): Delivered | null {
    const r = this.appReceiver(receiver);
    const q = r.queue.shift();
    if (!q) return null;
    r.queueBytes -= q.delivered.payload.length + this.config.heldItemOverhead;
    if (!this.closed) {
      for (const att of q.delivered.attachments) this.expose(att);
      this.guard(() => this.room(r));
    }
    return q.delivered;
  }
  /** How many messages a receiver holds. */
  queued(receiver: number): number {
    return this.receivers.get(receiver)?.queue.length ?? 0;
  }
  /** The application let go of a sender: cancel it unless finished. */
  dropSender(sender: number): void {
    const s = this.senders.get(sender);
    if (!s || s.appDropped) return;
    s.appDropped = true;
    if (!this.closed && s.state === "open") this.cancelSender(s);
    this.maybeForgetSender(s);
  }
  /** The application let go of a receiver: close it. */
  dropReceiver(receiver: number): void {
    const r = this.receivers.get(receiver);
    if (!r || r.appDropped) return;
    r.appDropped = true;
    if (!this.closed && r.state !== "gone") this.guard(() => this.closeRx(r, "closed"));
    else this.discardQueues([r], false);
    this.maybeForgetReceiver(r);
  }
  /** Close the connection (code 0: graceful). */
  close(code: number = CloseCode.NO_ERROR, reason = ""): void {
    if (this.closed) return;
    this.out.push({ type: "close", code, reason });
    this.teardown(code, reason, false);
  }
  /** Null while the sender is alive, else why it ended. */
  senderStatus(sender: number): EndReason | null {
    const s = this.senders.get(sender);
    if (!s) throw new ChannelClosed(`unknown or dropped sender ${sender}`);
    return s.endReported ? s.endReason : null;
  }
  /** Null while the receiver is alive, else why it ended. */
  receiverStatus(receiver: number): EndReason | null {
    const r = this.receivers.get(receiver);
    if (!r) throw new ChannelClosed(`unknown or dropped receiver ${receiver}`);
    return r.endReported ? r.endReason : null;
  }
  /** The channel ID behind a handle. */
  channelOf(handle: number): number | null {
    return this.senders.get(handle)?.channel ?? this.receivers.get(handle)?.channel ?? null;
  }
  /** Sizes of every per-peer table (the engine is idle when all but `senders` for the entrypoint are 0). */
  stateSizes(): Record<string, number> {
    return {
      senders: this.senders.size, receivers: this.receivers.size, unclaimed: this.unclaimed.size,
      links: this.links.nodes.size, streams: this.streams.size, timers: this.timers.size, handedOut: this.handedOut.size,
      discarded: this.discarded.size,
    };
  }

  // ---------------------------------------------------------------- halves

  private addSender(channel: number, reachable: boolean, exposed: boolean): SenderRec {
    const s = new SenderRec(this.nextHandle++, channel, reachable, exposed);
    this.senders.set(s.handle, s);
    this.txOf.set(channel, s);
    return s;
  }
  private addReceiver(channel: number, exposed: boolean, claimed: boolean): ReceiverRec {
    const r = new ReceiverRec(this.nextHandle++, channel, exposed, claimed);
    this.receivers.set(r.handle, r);
    this.rxOf.set(channel, r);
    return r;
  }
  private appSender(handle: number): SenderRec {
    if (this.closed) throw new ConnectionLost();
    const s = this.senders.get(handle);
    if (!s || s.appDropped) throw new ChannelClosed(`unknown or dropped sender ${handle}`);
    return s;
  }
  private appReceiver(handle: number): ReceiverRec {
    const r = this.receivers.get(handle);
    if (!r || r.appDropped) throw new ChannelClosed(`unknown or dropped receiver ${handle}`);
    return r;
  }
  private sendError(s: SenderRec): Error {
    if (s.endReason !== null && s.endReported) return errorForReason(s.endReason, "sender");
    return new ChannelClosed("the sender was finished or cancelled");
  }

  // ---------------------------------------------------------------- streams

  private newRec(id: number, role: Role, half: number | null = null): StreamRec {
    return {
      id, role, reader: new FrameReader(this.config.maxFrameSize), half, framesSeen: 0, inDone: isUni(id) && openedByUs(id),
      outStarted: false, outDone: isUni(id) && !openedByUs(id), pendingReset: null, finalSeen: false, stalled: null,
      stalledOn: null, endAfterStall: false,
    };
  }
  private writeRaw(sid: number, data: Uint8Array, end: boolean): void {
    this.out.push({ type: "send", streamId: sid, data, end });
  }
  private openUni(data: Uint8Array, end: boolean): number {
    const sid = this.nextUni;
    this.nextUni += 4;
    this.writeRaw(sid, this.needVersion ? concat([VERSION_BYTES, data]) : data, end);
    return sid;
  }
  private openBidi(data: Uint8Array, role: Role, half: number): number {
    const sid = this.nextBidi;
    this.nextBidi += 4;
    const rec = this.newRec(sid, role, half);
    rec.outStarted = true;
    this.streams.set(sid, rec);
    this.writeRaw(sid, this.needVersion ? concat([VERSION_BYTES, data]) : data, false);
    return sid;
  }
  /** Write on our direction of a control stream. */
  private write(sid: number, data: Uint8Array, end = false): void {
    this.owed.delete(sid);
    const rec = this.streams.get(sid);
    if (rec) {
      if (!rec.outStarted) {
        rec.outStarted = true;
        if (this.needVersion) data = concat([VERSION_BYTES, data]);
      }
      if (end) rec.outDone = true;
    }
    this.writeRaw(sid, data, end);
    if (end && rec) this.maybeDrop(rec);
  }
  /** Reset our direction of a control stream (on one we opened: once the peer showed it read our ChannelControl). */
  private reset(sid: number, code: number): void {
    this.owed.delete(sid);
    const rec = this.streams.get(sid);
    if (rec && openedByUs(sid) && rec.framesSeen === 0 && !rec.inDone) {
      rec.pendingReset = code;
      return;
    }
    this.out.push({ type: "reset", streamId: sid, code });
    if (rec) {
      rec.outDone = true;
      rec.pendingReset = null;
      this.maybeDrop(rec);
    }
  }
  private flushPendingReset(rec: StreamRec): void {
    if (rec.pendingReset !== null) {
      const code = rec.pendingReset;
      rec.pendingReset = null;
      this.out.push({ type: "reset", streamId: rec.id, code });
      rec.outDone = true;
      this.maybeDrop(rec);
    }
  }
  private maybeDrop(rec: StreamRec): void {
    if (rec.inDone && rec.outDone && rec.role !== "connection" && rec.stalled === null) this.streams.delete(rec.id);
  }
  private unbind(sid: number): void {
    const rec = this.streams.get(sid);
    if (rec) rec.half = null;
    this.owed.delete(sid);
  }

  // ---------------------------------------------------------------- incoming

  private onStreamData(sid: number, data: Uint8Array, end: boolean): void {
    let rec = this.streams.get(sid);
    if (!rec) {
      if (openedByUs(sid)) return; // (a stream of ours already forgotten)
      rec = this.newRec(sid, isUni(sid) ? "new_uni" : "new_bidi");
      this.streams.set(sid, rec);
    }
    if (rec.inDone) return;
    const frames = rec.reader.feed(data);
    if (end) {
      rec.reader.finish();
      rec.inDone = true;
    }
    if (rec.stalled !== null) {
      rec.stalled.push(...frames);
      rec.endAfterStall ||= end;
      return;
    }
    this.runFrames(rec, frames, end);
  }

  /** Process frames of one stream in order; a full receiver queue stalls the rest. */
  private runFrames(rec: StreamRec, frames: Frame[], end: boolean): void {
    for (let i = 0; i < frames.length; i++) {
      try {
        this.onFrame(rec, frames[i]!);
      } catch (err) {
        if (err instanceof QueueFull) {
          rec.stalled = frames.slice(i);
          rec.stalledOn = err.receiver;
          rec.endAfterStall = end;
          this.out.push({ type: "pause", streamId: rec.id });
          return;
        }
        throw err;
      }
      if (this.closed) return;
    }
    if (end) this.onStreamEnd(rec);
  }

  private onFrame(rec: StreamRec, frame: Frame): void {
    const first = rec.framesSeen === 0;
    rec.framesSeen += 1;
    if (first && openedByUs(rec.id)) this.flushPendingReset(rec);
    if (frame.type === "Version") {
      if (!first) throw new ProtocolError("Version frame not first in its stream");
      if (frame.version !== PROTOCOL_VERSION) {
        throw new ProtocolError(`peer speaks Aqueduct ${JSON.stringify(frame.version)}`, CloseCode.VERSION_MISMATCH);
      }
      return;
    }
    if (rec.finalSeen) throw new ProtocolError(`${frame.type} after the final frame of stream ${rec.id}`);
    switch (rec.role) {
      case "connection":
        if (frame.type !== "ConnectionControl" || this.peerHeaders !== null || rec.framesSeen !== 2) {
          // (Version first, then ConnectionControl, then nothing)
          throw new ProtocolError(`${frame.type} on the connection control stream`);
        }
        this.peerHeaders = frame.headers;
        this.needVersion = false;
        this.appEvents.push({ type: "headers", headers: frame.headers });
        return;
      case "new_bidi":
        if (frame.type !== "ChannelControl") throw new ProtocolError(`${frame.type} opens a bidirectional stream`);
        return this.onChannelControl(rec, safe(frame.channel, "channel ID"));
      case "new_uni":
        if (frame.type === "Message") {
          rec.role = "messages";
          return this.onMessage(frame.channel, frame.number, frame.attachments, frame.payload, rec.id);
        }
        if (frame.type === "ClosedChannelLost") {
          rec.role = "lost_notice";
          return this.onClosedChannelLost(safe(frame.channel, "channel ID"));
        }
        throw new ProtocolError(`${frame.type} opens a unidirectional stream`);
      case "messages":
        if (frame.type !== "Message") throw new ProtocolError(`${frame.type} on a message stream`);
        return this.onMessage(frame.channel, frame.number, frame.attachments, frame.payload, rec.id);
      case "lost_notice":
        throw new ProtocolError(`${frame.type} after ClosedChannelLost`);
      case "to_sender": {
        if (frame.type === "CloseReceiver") rec.finalSeen = true;
        else if (frame.type !== "AckReliable" && frame.type !== "AckNackUnreliable") {
          throw new ProtocolError(`${frame.type} sent to a sender`);
        }
        const s = rec.half === null ? undefined : this.senders.get(rec.half);
        if (s && s.state !== "gone") this.senderFrame(s, frame);
        return;
      }
      case "to_receiver": {
        if (frame.type === "FinishSender") rec.finalSeen = true;
        else if (frame.type !== "SentUnreliable") throw new ProtocolError(`${frame.type} sent to a receiver`);
        const r = rec.half === null ? undefined : this.receivers.get(rec.half);
        if (r && r.state !== "gone") this.receiverFrame(r, frame);
        return;
      }
    }
  }

  private onStreamEnd(rec: StreamRec): void {
    if (rec.role === "connection") throw new ProtocolError("the connection control stream was finished");
    if ((rec.role === "to_sender" || rec.role === "to_receiver") && !rec.finalSeen) {
      const half = rec.half === null ? undefined : rec.role === "to_sender" ? this.senders.get(rec.half) : this.receivers.get(rec.half);
      if (half && half.state !== "gone") throw new ProtocolError(`control stream ${rec.id} finished without its final frame`);
    }
    if (rec.role === "new_bidi") this.reset(rec.id, ResetCode.LOST);
    if (openedByUs(rec.id)) this.flushPendingReset(rec);
    this.maybeDrop(rec);
  }

  private onStreamReset(sid: number, code: number): void {
    if (sid === 0) throw new ProtocolError("the connection control stream was reset");
    const rec = this.streams.get(sid);
    if (!rec || rec.inDone) return;
    rec.inDone = true;
    rec.stalled = null;
    if (rec.stalledOn !== null) rec.stalledOn = null;
    if (openedByUs(sid)) this.flushPendingReset(rec);
    if (rec.role === "to_sender" && rec.half !== null) {
      const s = this.senders.get(rec.half);
      if (s && s.state !== "gone") this.senderCtrlReset(s, code);
    } else if (rec.role === "to_receiver" && rec.half !== null) {
      const r = this.receivers.get(rec.half);
      if (r && r.state !== "gone") {
        if (code === ResetCode.CANCELLED) this.closeRx(r, "cancelled");
        else this.loseRx(r);
      }
    } else if (rec.role === "new_bidi") {
      this.reset(sid, ResetCode.LOST);
    }
    this.maybeDrop(rec);
  }

  private onDatagram(data: Uint8Array): void {
    const frames = decodeFrames(data, this.config.maxFrameSize);
    let i = 0;
    if (frames[0]!.type === "Version") {
      if (frames[0]!.version !== PROTOCOL_VERSION) {
        throw new ProtocolError(`peer speaks Aqueduct ${JSON.stringify(frames[0]!.version)}`, CloseCode.VERSION_MISMATCH);
      }
      i = 1;
    }
    for (; i < frames.length; i++) {
      const f = frames[i]!;
      if (f.type !== "Message") throw new ProtocolError(`${f.type} in a datagram`);
      this.onMessage(f.channel, f.number, f.attachments, f.payload, null);
      if (this.closed) return;
    }
  }

  private onChannelControl(rec: StreamRec, channel: number): void {
    if (minterOf(channel) !== SIDE) throw new ProtocolError(`ChannelControl for channel ${channel}, which the peer minted`);
    const weSend = receiverSide(channel) !== SIDE;
    const half = weSend ? this.txOf.get(channel) : this.rxOf.get(channel);
    if (!half || half.ctrl !== null || half.state === "gone") {
      rec.role = weSend ? "to_sender" : "to_receiver";
      this.reset(rec.id, ResetCode.LOST);
      return;
    }
    rec.role = weSend ? "to_sender" : "to_receiver";
    rec.half = half.handle;
    half.ctrl = rec.id;
    half.ctrlOpen = true;
    if (half instanceof SenderRec) this.senderAttached(half, rec.id);
    else this.receiverAttached(half, rec.id);
  }

  private onClosedChannelLost(channel: number): void {
    if (minterOf(channel) === SIDE) throw new ProtocolError(`ClosedChannelLost for channel ${channel}, which we minted`);
    const r = this.unclaimed.get(channel);
    if (!r) return;
    this.unclaimed.delete(channel);
    if (r.state !== "gone") this.loseRx(r);
    r.appDropped = true;
    this.discardQueues([r], true);
    this.maybeForgetReceiver(r);
  }

  // ---------------------------------------------------------------- intake

  private onMessage(channelBig: bigint, numberBig: bigint, attachBig: bigint[], payload: Uint8Array, sid: number | null): void {
    const channel = safe(channelBig, "channel ID");
    const n = safe(numberBig, "message number");
    const reliable = sid !== null;
    if (n !== 0 && isOneshot(channel)) throw new ProtocolError(`message number ${n} on oneshot channel ${channel}`);
    let r = this.rxOf.get(channel);
    if (!r) {
      if (receiverSide(channel) !== SIDE) throw new ProtocolError(`Message on channel ${channel}, whose receiver would be the sender's own side`);
      if (minterOf(channel) === SIDE || this.unclaimed.has(channel) || this.handedOut.has(channel)) return;
      if (this.discarded.has(channel)) return; // (late: a ghost would be made and discarded after a round trip)
      if (this.unclaimed.size >= this.config.maxPendingReceivers) {
        throw new ProtocolError(`more than maxPendingReceivers=${this.config.maxPendingReceivers} auto-created receivers`, CloseCode.LIMIT_EXCEEDED);
      }
      r = this.createRemoteReceiver(channel, false);
      this.unclaimed.set(channel, r);
    }
    const acks = r.acks;
    if (reliable) {
      if (acks.hasReliable(n)) throw new ProtocolError(`reliable message ${n} on channel ${channel} received twice`);
      if (acks.finishCount !== null && n >= acks.finishCount) throw new ProtocolError(`reliable message ${n} on channel ${channel} beyond its FinishSender count`);
    } else {
      if (n < acks.unrelStart || acks.unrelReceived.has(n)) return;
      if (acks.finishCount !== null && n >= acks.declared) throw new ProtocolError(`unreliable message ${n} on channel ${channel} beyond the declared count`);
    }
    if (r.oneshot && r.messagesSeen) throw new ProtocolError(`second message on oneshot channel ${channel}`);
    const size = payload.length + this.config.heldItemOverhead;
    if (r.queue.length + 1 > this.config.maxReceiverQueueMessages || r.queueBytes + size > this.config.maxReceiverQueueBytes) {
      if (!reliable) return;
      if (!r.queue.length) throw new ProtocolError(`a message on channel ${channel} is larger than a receiver queue may hold`, CloseCode.LIMIT_EXCEEDED);
      throw new QueueFull(r.handle);
    }
    const attachments = this.takeAttachments(safeAll(attachBig, "channel ID"));
    r.messagesSeen += 1;
    if (reliable) acks.markReliable(n);
    else acks.unrelReceived.add(n, n + 1);
    acks.oweAcks(this.nowValue + this.config.ackDelay);
    this.checkRanges(r);
    const wasEmpty = r.queue.length === 0;
    r.queue.push({ delivered: { payload, attachments, channel, number: n, delivery: reliable ? "ordered" : "unreliable" }, sid });
    r.queueBytes += size;
    if (r.state === "close_wait") this.discardQueues([r], false);
    else if (wasEmpty && r.exposed && !r.appDropped) this.appEvents.push({ type: "message_available", receiver: r.handle });
    if (r.state === "finishing") this.checkFinished(r);
    this.schedule(r);
  }

  /** The per-channel cap on ack ranges: reliable gaps past it close; the oldest unreliable ones are nacked now. */
  private checkRanges(r: ReceiverRec): void {
    const acks = r.acks;
    const cap = this.config.maxAckRanges;
    const reliable = acks.reliableRanges();
    if (reliable > cap) {
      throw new ProtocolError(`more than maxAckRanges=${cap} ranges of reliable message numbers on channel ${r.channel}`,
        CloseCode.LIMIT_EXCEEDED);
    }
    if (reliable + acks.unrelReceived.size > cap) {
      if (r.ctrl === null || !r.ctrlOpen) {
        throw new ProtocolError(`more than maxAckRanges=${cap} ranges of unreliable message numbers on channel ${r.channel} before its control stream`,
          CloseCode.LIMIT_EXCEEDED);
      }
      acks.nackOldest(Math.floor((cap - reliable) / 2));
      this.flushAcks(r);
    }
  }

  private takeAttachments(ids: number[]): Attachment[] {
    return ids.map((a, index) => {
      if (minterOf(a) === SIDE) throw new ProtocolError(`attachment ${a} was minted by the side receiving it`);
      if (a === ENTRYPOINT) throw new ProtocolError("the entrypoint channel cannot be attached");
      if (receiverSide(a) === SIDE) {
        let h: number;
        const pending = this.unclaimed.get(a);
        if (pending) {
          this.unclaimed.delete(a);
          pending.claimed = true;
          h = pending.handle;
        } else if (this.rxOf.has(a) || this.handedOut.has(a)) {
          throw new ProtocolError(`receiver of channel ${a} handed out twice`);
        } else {
          h = this.createRemoteReceiver(a, true).handle;
        }
        this.rememberHandedOut(a);
        return { index, channel: a, isSender: false, handle: h };
      }
      if (this.txOf.has(a)) throw new ProtocolError(`sender of channel ${a} attached twice`);
      if (this.senders.size + this.receivers.size + 1 > this.config.maxChannels) {
        throw new ProtocolError(`the peer made us exceed maxChannels=${this.config.maxChannels}`, CloseCode.LIMIT_EXCEEDED);
      }
      const s = this.addSender(a, true, false);
      s.ctrl = this.openBidi(encodeFrame({ type: "ChannelControl", channel: BigInt(a) }), "to_sender", s.handle);
      s.ctrlOpen = true;
      return { index, channel: a, isSender: true, handle: s.handle };
    });
  }

  /** Remember a handed-out channel; past the cap the oldest is forgotten (a possible ghost later, which the spec
   * allows: a filter may have false negatives, never false positives). */
  private rememberHandedOut(channel: number): void {
    this.remember(this.handedOut, channel, this.config.maxHandedOut);
  }

  /** Add to a bounded filter: past `size` entries the oldest goes. */
  private remember(filter: Set<number>, channel: number, size: number): void {
    if (size <= 0) return;
    filter.add(channel);
    if (filter.size > size) filter.delete(filter.values().next().value!);
  }

  private createRemoteReceiver(channel: number, claimed: boolean): ReceiverRec {
    if (this.senders.size + this.receivers.size + 1 > this.config.maxChannels) {
      throw new ProtocolError(`the peer made us exceed maxChannels=${this.config.maxChannels}`, CloseCode.LIMIT_EXCEEDED);
    }
    const r = this.addReceiver(channel, false, claimed);
    r.ctrl = this.openBidi(encodeFrame({ type: "ChannelControl", channel: BigInt(channel) }), "to_receiver", r.handle);
    r.ctrlOpen = true;
    return r;
  }

  /** A receiver made room (a take, or it ended): streams stalled on it run on. */
  private room(r: ReceiverRec): void {
    for (const rec of [...this.streams.values()]) {
      if (rec.stalledOn !== r.handle || rec.stalled === null) continue;
      const frames = rec.stalled;
      const end = rec.endAfterStall;
      rec.stalled = null;
      rec.stalledOn = null;
      rec.endAfterStall = false;
      this.runFrames(rec, frames, end);
      if (rec.stalled === null) {
        this.out.push({ type: "resume", streamId: rec.id });
        this.maybeDrop(rec);
      }
      if (this.closed) return;
    }
  }

  // ---------------------------------------------------------------- senders

  private finishSender(s: SenderRec): void {
    if (s.state === "finish_wait" || s.state === "finished" || s.endReason === "finished") return;
    if (s.state !== "open") throw this.sendError(s);
    s.move("finish_wait");
    if (s.orderedSid !== null) this.writeRaw(s.orderedSid, new Uint8Array(0), true);
    if (s.ctrl !== null) this.doFinish(s);
  }
  private doFinish(s: SenderRec): void {
    const frames: Frame[] = [];
    if (s.undeclared) {
      frames.push({ type: "SentUnreliable", count: BigInt(s.undeclared) });
      s.undeclared = 0;
    }
    frames.push({ type: "FinishSender", reliableCount: BigInt(s.nextRel) });
    this.timers.delete(`su:${s.handle}`);
    s.move("finished");
    s.ctrlOpen = false;
    this.write(s.ctrl!, encodeFrames(frames), true);
  }
  private cancelSender(s: SenderRec): void {
    if (s.state !== "open" && s.state !== "finish_wait") return;
    s.move("cancel_wait");
    this.resetMessageStreams(s, ResetCode.CANCELLED);
    this.timers.delete(`su:${s.handle}`);
    if (s.ctrl !== null) this.doCancel(s);
  }
  private doCancel(s: SenderRec): void {
    s.move("cancelled");
    this.resetCtrl(s, ResetCode.CANCELLED);
  }
  private resetCtrl(h: SenderRec | ReceiverRec, code: number): void {
    if (h.ctrl !== null && h.ctrlOpen) {
      h.ctrlOpen = false;
      this.reset(h.ctrl, code);
    }
  }
  private resetMessageStreams(s: SenderRec, code: number): void {
    if (s.orderedSid !== null) {
      this.out.push({ type: "reset", streamId: s.orderedSid, code });
      s.orderedSid = null;
    }
    for (const sid of s.unorderedSids.values()) this.out.push({ type: "reset", streamId: sid, code });
    s.unorderedSids.clear();
  }
  private senderAttached(s: SenderRec, sid: number): void {
    if (s.state === "open" && !s.undeclared && s.channel !== ENTRYPOINT) this.owed.set(sid, SENT_NONE);
    if (s.state === "finish_wait") this.doFinish(s);
    else if (s.state === "cancel_wait") this.doCancel(s);
    else if (s.undeclared) this.sentUnreliableDue(s.handle);
  }
  private sentUnreliableDue(handle: number): void {
    const s = this.senders.get(handle);
    if (!s || s.state !== "open" || !s.ctrlOpen || !s.undeclared || s.ctrl === null) return;
    this.write(s.ctrl, encodeFrame({ type: "SentUnreliable", count: BigInt(s.undeclared) }));
    s.undeclared = 0;
  }
  private senderFrame(s: SenderRec, frame: Frame): void {
    if (frame.type === "AckReliable") {
      for (const [a, b] of s.acks.ackReliable(safeAll(frame.ranges, "range"), s.nextRel, s.channel)) this.report(s, true, true, a, b);
      if (s.acks.relAcked.size > this.config.maxAckRanges) {
        throw new ProtocolError(`more than maxAckRanges=${this.config.maxAckRanges} ranges of acked message numbers on channel ${s.channel}`,
          CloseCode.LIMIT_EXCEEDED);
      }
    } else if (frame.type === "AckNackUnreliable") {
      if (!frame.ranges.length) return;
      for (const [a, b, positive] of s.acks.acknackUnreliable(safeAll(frame.ranges, "range"), s.nextUnrel, s.channel)) {
        this.report(s, positive, false, a, b);
      }
    } else if (frame.type === "CloseReceiver") {
      const [acks, nacks] = s.acks.closeReceiver(safeAll(frame.ranges, "range"), s.nextRel, s.channel);
      for (const [a, b] of acks) this.report(s, true, true, a, b);
      for (const [a, b] of nacks) this.report(s, false, true, a, b);
      const rest = s.acks.settleUnreliable(s.nextUnrel);
      if (rest) this.report(s, false, false, rest[1], rest[2]);
      const reason: EndReason = s.state === "finished" ? "finished"
        : s.state === "cancelled" || s.state === "cancel_wait" ? "closed" : "receiver dropped";
      if (s.state !== "finished") this.resetMessageStreams(s, ResetCode.CANCELLED);
      this.resetCtrl(s, ResetCode.CANCELLED);
      this.senderGone(s, reason);
    }
  }
  private senderCtrlReset(s: SenderRec, code: number): void {
    for (const [reliable, first, stop] of s.acks.settleAll(s.nextRel, s.nextUnrel)) this.report(s, false, reliable, first, stop);
    this.resetMessageStreams(s, ResetCode.LOST);
    this.resetCtrl(s, ResetCode.LOST);
    this.senderGone(s, code === ResetCode.LOST ? "lost" : "receiver dropped");
  }
  /** Report a run once: acks of an unreachable sender wait; nacks cascade at once. */
  private report(s: SenderRec, acked: boolean, reliable: boolean, first: number, stop: number): void {
    if (reliable) for (const n of [...s.unorderedSids.keys()]) if (first <= n && n < stop) s.unorderedSids.delete(n);
    const keys = this.links.keysIn(s.handle, reliable, first, stop);
    if (acked) {
      if (s.reachable) {
        if (s.exposed) this.appEvents.push({ type: "acked", sender: s.handle, reliable, first, stop });
      } else {
        s.deferred.push([reliable, first, stop]);
      }
      if (keys.length) this.links.acked(s.handle, keys, (id) => this.onReachable(id));
    } else {
      if (s.exposed) this.appEvents.push({ type: "nacked", sender: s.handle, reliable, first, stop });
      if (keys.length) this.links.nacked(s.handle, keys, (id, node) => this.onLost(id, node));
    }
  }
  private onReachable(id: number): void {
    const s = this.senders.get(id);
    if (s && !s.reachable) {
      s.reachable = true;
      this.reportDeferred(s, "acked");
    }
  }
  private reportDeferred(s: SenderRec, type: "acked" | "nacked"): void {
    const deferred = s.deferred;
    s.deferred = [];
    if (s.exposed) for (const [reliable, first, stop] of deferred) this.appEvents.push({ type, sender: s.handle, reliable, first, stop });
    this.maybeForgetSender(s);
  }
  /** A cascade reached a half (spec: cascading loss detection). */
  private onLost(id: number, node: LinkNode): void {
    if (node.isSender) {
      const s = this.senders.get(id);
      if (s && s.state !== "gone") {
        if (s.ctrl !== null && !s.ctrlOpen) this.sendClosedChannelLost(node.channel);
        if (s.deferred.length) this.reportDeferred(s, "nacked");
        const runs = s.acks.settleAll(s.nextRel, s.nextUnrel);
        if (s.exposed) for (const [reliable, first, stop] of runs) this.appEvents.push({ type: "nacked", sender: s.handle, reliable, first, stop });
        this.resetMessageStreams(s, ResetCode.LOST);
        this.resetCtrl(s, ResetCode.LOST);
        this.senderGone(s, "lost");
        return;
      }
      this.sendClosedChannelLost(node.channel);
      if (s && s.deferred.length) this.reportDeferred(s, "nacked");
      return;
    }
    const r = this.receivers.get(id);
    if (r && r.state !== "gone") {
      this.loseRx(r);
      return;
    }
    this.sendClosedChannelLost(node.channel);
  }
  private sendClosedChannelLost(channel: number): void {
    this.openUni(encodeFrame({ type: "ClosedChannelLost", channel: BigInt(channel) }), true);
  }
  private senderGone(s: SenderRec, reason: EndReason): void {
    s.move("gone");
    if (this.txOf.get(s.channel) === s) this.txOf.delete(s.channel);
    this.timers.delete(`su:${s.handle}`);
    if (s.ctrl !== null) this.unbind(s.ctrl);
    s.endReason = reason;
    if (!s.endReported) {
      s.endReported = true;
      if (s.exposed && !s.appDropped) this.appEvents.push({ type: "sender_ended", sender: s.handle, reason });
    }
    this.maybeForgetSender(s);
  }
  private maybeForgetSender(s: SenderRec): void {
    if (s.state === "gone" && s.appDropped && !s.deferred.length) this.senders.delete(s.handle);
  }
  private exposeSender(handle: number): void {
    const s = this.senders.get(handle);
    if (s && !s.exposed) {
      s.exposed = true;
      if (s.endReported && s.endReason !== null) this.appEvents.push({ type: "sender_ended", sender: s.handle, reason: s.endReason });
    }
  }
  private abandonSender(handle: number, lost: boolean): void {
    const s = this.senders.get(handle);
    if (!s) return;
    s.appDropped = true;
    if (lost && s.state !== "gone") this.senderCtrlReset(s, ResetCode.LOST);
    else if (s.state === "open") this.cancelSender(s);
    this.maybeForgetSender(s);
  }

  // ---------------------------------------------------------------- receivers

  private receiverAttached(r: ReceiverRec, _sid: number): void {
    if (r.state === "close_wait") this.closeRx(r, r.closeReason!);
    else {
      this.owed.set(r.ctrl!, EMPTY_ACKNACK);
      this.schedule(r);
    }
  }
  private receiverFrame(r: ReceiverRec, frame: Frame): void {
    if (frame.type === "SentUnreliable") {
      const count = safe(frame.count, "SentUnreliable count");
      if (!count) return;
      r.acks.declare(count, this.nowValue + Math.max(this.config.nackTimeout, 2 * this.rtt), this.config.ackDelay);
      this.schedule(r);
    } else if (frame.type === "FinishSender") {
      r.acks.finish(safe(frame.reliableCount, "FinishSender count"));
      r.move("finishing");
      this.checkFinished(r);
    }
  }
  private schedule(r: ReceiverRec): void {
    const key = `rx:${r.handle}`;
    if (r.state === "gone" || !r.ctrlOpen) {
      this.timers.delete(key);
      return;
    }
    const acks = r.acks;
    let when: number | null = null;
    if (acks.owed()) when = acks.ackDue ?? this.nowValue;
    const deadline = acks.nextNackDeadline();
    if (deadline !== null) when = when === null ? deadline : Math.min(when, deadline);
    if (when === null) this.timers.delete(key);
    else this.timers.set(key, when);
  }
  private receiverDue(handle: number): void {
    const r = this.receivers.get(handle);
    if (!r || r.state === "gone" || !r.ctrlOpen) return;
    const acks = r.acks;
    if (acks.nacksDue(this.nowValue) || (acks.ackDue !== null && acks.ackDue <= this.nowValue)) this.flushAcks(r);
    if (r.state === "finishing") this.checkFinished(r);
    this.schedule(r);
  }
  private flushAcks(r: ReceiverRec): void {
    const acks = r.acks;
    const frames: Frame[] = [];
    const rel = acks.takeAckReliable();
    if (rel !== null) frames.push({ type: "AckReliable", ranges: bigs(rel) });
    const unrel = acks.takeAcknack(acks.decidedEnd());
    if (unrel !== null) frames.push({ type: "AckNackUnreliable", ranges: bigs(unrel) });
    acks.ackDue = null;
    if (frames.length) this.write(r.ctrl!, encodeFrames(frames));
  }
  private checkFinished(r: ReceiverRec): void {
    if (r.state === "finishing" && r.acks.allAccounted()) this.closeRx(r, "finished");
  }
  /** The close procedure (waits for the control stream); the queue goes unless the channel finished. */
  private closeRx(r: ReceiverRec, reason: EndReason, discard = true): void {
    if (r.state === "gone") return;
    if (discard && reason !== "finished") this.discardQueues([r], false);
    if (r.ctrl === null || !r.ctrlOpen) {
      if (r.state !== "close_wait") r.move("close_wait");
      r.closeReason = reason;
      return;
    }
    const acks = r.acks;
    const frames: Frame[] = [];
    const unrel = acks.takeAcknack(Math.max(acks.unrelReceived.maxStop(), acks.unrelStart));
    if (unrel && unrel.length) frames.push({ type: "AckNackUnreliable", ranges: bigs(unrel) });
    frames.push({ type: "CloseReceiver", ranges: bigs(acks.closeRanges()) });
    r.ctrlOpen = false;
    this.write(r.ctrl, encodeFrames(frames), true);
    this.endRx(r, reason);
  }
  private loseRx(r: ReceiverRec): void {
    if (r.state === "gone") return;
    this.resetLost(r);
    this.discardQueues([r], true);
  }
  private resetLost(r: ReceiverRec): void {
    this.resetCtrl(r, ResetCode.LOST);
    this.endRx(r, "lost");
  }
  private endRx(r: ReceiverRec, reason: EndReason): void {
    r.move("gone");
    r.endReason = reason;
    if (this.rxOf.get(r.channel) === r) this.rxOf.delete(r.channel);
    this.remember(this.discarded, r.channel, this.config.discardedFilterSize);
    this.timers.delete(`rx:${r.handle}`);
    if (r.ctrl !== null) this.unbind(r.ctrl);
    const ghost = this.handedOut.has(r.channel);
    if (!r.claimed && (reason === "lost" || ghost) && this.unclaimed.get(r.channel) === r) {
      this.unclaimed.delete(r.channel);
      r.appDropped = true;
      if (reason === "finished") this.discardQueues([r], false);
    }
    this.room(r);
    this.reportRxEnd(r);
    this.maybeForgetReceiver(r);
  }
  private reportRxEnd(r: ReceiverRec): void {
    if (r.exposed && !r.endReported && r.endReason !== null) {
      r.endReported = true;
      if (!r.appDropped) this.appEvents.push({ type: "receiver_ended", receiver: r.handle, reason: r.endReason });
    }
  }
  private maybeForgetReceiver(r: ReceiverRec): void {
    if (r.state === "gone" && r.appDropped && this.unclaimed.get(r.channel) !== r) this.receivers.delete(r.handle);
  }
  /** Drop every queued message of `start`, and the halves they carry, through nested queues. */
  private discardQueues(start: ReceiverRec[], lost: boolean): void {
    const work = [...start];
    while (work.length) {
      const r = work.pop()!;
      const queue = r.queue;
      r.queue = [];
      r.queueBytes = 0;
      if (!this.closed) this.room(r);
      for (const { delivered } of queue) {
        for (const att of delivered.attachments) {
          if (att.isSender) {
            this.abandonSender(att.handle, lost);
            continue;
          }
          const inner = this.receivers.get(att.handle);
          if (!inner) continue;
          inner.appDropped = true;
          if (inner.state !== "gone") {
            if (lost) this.resetLost(inner);
            else this.closeRx(inner, "closed", false);
          }
          this.maybeForgetReceiver(inner);
          work.push(inner);
        }
      }
    }
  }
  private expose(att: Attachment): void {
    if (att.isSender) return this.exposeSender(att.handle);
    const r = this.receivers.get(att.handle);
    if (r && !r.exposed) {
      r.exposed = true;
      if (r.queue.length) this.appEvents.push({ type: "message_available", receiver: r.handle });
      this.reportRxEnd(r);
    }
  }

  // ---------------------------------------------------------------- the end

  private teardown(code: number, reason: string, byPeer: boolean): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.senders.values()) {
      s.deferred = [];
      if (!s.endReported) {
        s.state = "gone";
        s.endReason = "connection lost";
        s.endReported = true;
        if (s.exposed && !s.appDropped) this.appEvents.push({ type: "sender_ended", sender: s.handle, reason: "connection lost" });
      }
    }
    for (const r of this.receivers.values()) {
      if (r.endReason !== "finished") {
        r.queue = [];
        r.queueBytes = 0;
      }
      if (!r.endReported) {
        r.state = "gone";
        r.endReason = "connection lost";
        r.endReported = true;
        if (r.exposed && !r.appDropped) this.appEvents.push({ type: "receiver_ended", receiver: r.handle, reason: "connection lost" });
      }
    }
    this.timers.clear();
    this.links.clear();
    this.streams.clear();
    this.owed.clear();
    this.unclaimed.clear();
    this.appEvents.push({ type: "connection_closed", code, reason, byPeer });
  }
}
