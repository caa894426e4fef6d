/**
 * Incoming streams and datagrams: stream roles, frame routing, stalled streams (as aqueduct/core/incoming.py and
 * flow.py).
 *
 * Theory of operation. A stream the server opens gets its role from its first frame after Version: a bidi
 * stream's ChannelControl binds it to one of our halves (to_sender / to_receiver), a uni stream carries Messages
 * or one ClosedChannelLost. Frames of a stream run in order; a reliable Message that finds its receiver's queue
 * full (intake.ts throws QueueFull) stalls the rest of that stream and pauses it (the adapter stops reading, so
 * the server's QUIC window closes) until the application takes from that queue (`room`: the stalled frames run,
 * then the stream resumes). A stream that ends or is reset ends the half it was bound to as the spec says.
 * @module
 */
import { minterOf, receiverSide } from "../wire/channelId.js";
import { CloseCode, ProtocolError, ResetCode } from "../wire/errors.js";
import { PROTOCOL_VERSION, type Frame } from "../wire/frames.js";
import { decodeFrames } from "../wire/reader.js";
import { ReceiverRec, SenderRec } from "./halves.js";
import { SIDE, isUni, openedByUs, safe, type Parts } from "./context.js";
import type { StreamRec } from "./streams.js";
import { QueueFull } from "./intake.js";

/** Routes what the server sends (stream data, resets, datagrams) to the halves; stalls and resumes streams. */
export class Incoming {
  constructor(private readonly p: Parts) {}

  onStreamData(sid: number, data: Uint8Array, end: boolean): void {
    let rec = this.p.streams.records.get(sid);
    if (!rec) {
      if (openedByUs(sid)) return; // (a stream of ours already forgotten)
      rec = this.p.streams.newRec(sid, isUni(sid) ? "new_uni" : "new_bidi");
      this.p.streams.records.set(sid, rec);
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
  runFrames(rec: StreamRec, frames: Frame[], end: boolean): void {
    for (let i = 0; i < frames.length; i++) {
      try {
        this.onFrame(rec, frames[i]!);
      } catch (err) {
        if (err instanceof QueueFull) {
          rec.stalled = frames.slice(i);
          rec.stalledOn = err.receiver;
          rec.endAfterStall = end;
          this.p.ctx.out.push({ type: "pause", streamId: rec.id });
          return;
        }
        throw err;
      }
      if (this.p.ctx.closed) return;
    }
    if (end) this.onStreamEnd(rec);
  }
  onFrame(rec: StreamRec, frame: Frame): void {
    const first = rec.framesSeen === 0;
    rec.framesSeen += 1;
    if (first && openedByUs(rec.id)) this.p.streams.flushPendingReset(rec);
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
        if (frame.type !== "ConnectionControl" || this.p.ctx.peerHeaders !== null || rec.framesSeen !== 2) {
          // (Version first, then ConnectionControl, then nothing)
          throw new ProtocolError(`${frame.type} on the connection control stream`);
        }
        this.p.ctx.peerHeaders = frame.headers;
        this.p.ctx.needVersion = false;
        this.p.ctx.appEvents.push({ type: "headers", headers: frame.headers });
        return;
      case "new_bidi":
        if (frame.type !== "ChannelControl") throw new ProtocolError(`${frame.type} opens a bidirectional stream`);
        return this.onChannelControl(rec, safe(frame.channel, "channel ID"));
      case "new_uni":
        if (frame.type === "Message") {
          rec.role = "messages";
          return this.p.intake.onMessage(frame.channel, frame.number, frame.attachments, frame.payload, rec.id);
        }
        if (frame.type === "ClosedChannelLost") {
          rec.role = "lost_notice";
          return this.p.loss.onClosedChannelLost(safe(frame.channel, "channel ID"));
        }
        throw new ProtocolError(`${frame.type} opens a unidirectional stream`);
      case "messages":
        if (frame.type !== "Message") throw new ProtocolError(`${frame.type} on a message stream`);
        return this.p.intake.onMessage(frame.channel, frame.number, frame.attachments, frame.payload, rec.id);
      case "lost_notice":
        throw new ProtocolError(`${frame.type} after ClosedChannelLost`);
      case "to_sender": {
        if (frame.type === "CloseReceiver") rec.finalSeen = true;
        else if (frame.type !== "AckReliable" && frame.type !== "AckNackUnreliable") {
          throw new ProtocolError(`${frame.type} sent to a sender`);
        }
        const s = rec.half === null ? undefined : this.p.handles.senders.get(rec.half);
        if (s && s.state !== "gone") this.p.senders.senderFrame(s, frame);
        return;
      }
      case "to_receiver": {
        if (frame.type === "FinishSender") rec.finalSeen = true;
        else if (frame.type !== "SentUnreliable") throw new ProtocolError(`${frame.type} sent to a receiver`);
        const r = rec.half === null ? undefined : this.p.handles.receivers.get(rec.half);
        if (r && r.state !== "gone") this.p.receivers.receiverFrame(r, frame);
        return;
      }
    }
  }
  onStreamEnd(rec: StreamRec): void {
    if (rec.role === "connection") throw new ProtocolError("the connection control stream was finished");
    if ((rec.role === "to_sender" || rec.role === "to_receiver") && !rec.finalSeen) {
      const half = rec.half === null ? undefined : rec.role === "to_sender" ? this.p.handles.senders.get(rec.half) : this.p.handles.receivers.get(rec.half);
      if (half && half.state !== "gone") throw new ProtocolError(`control stream ${rec.id} finished without its final frame`);
    }
    if (rec.role === "new_bidi") this.p.streams.reset(rec.id, ResetCode.LOST);
    if (openedByUs(rec.id)) this.p.streams.flushPendingReset(rec);
    this.p.streams.maybeDrop(rec);
  }
  onStreamReset(sid: number, code: number): void {
    if (sid === 0) throw new ProtocolError("the connection control stream was reset");
    const rec = this.p.streams.records.get(sid);
    if (!rec || rec.inDone) return;
    rec.inDone = true;
    rec.stalled = null;
    if (rec.stalledOn !== null) rec.stalledOn = null;
    if (openedByUs(sid)) this.p.streams.flushPendingReset(rec);
    if (rec.role === "to_sender" && rec.half !== null) {
      const s = this.p.handles.senders.get(rec.half);
      if (s && s.state !== "gone") this.p.senders.senderCtrlReset(s, code);
    } else if (rec.role === "to_receiver" && rec.half !== null) {
      const r = this.p.handles.receivers.get(rec.half);
      if (r && r.state !== "gone") {
        if (code === ResetCode.CANCELLED) this.p.receivers.closeRx(r, "cancelled");
        else this.p.receivers.loseRx(r);
      }
    } else if (rec.role === "new_bidi") {
      this.p.streams.reset(sid, ResetCode.LOST);
    }
    this.p.streams.maybeDrop(rec);
  }
  onDatagram(data: Uint8Array): void {
    const frames = decodeFrames(data, this.p.ctx.config.maxFrameSize);
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
      this.p.intake.onMessage(f.channel, f.number, f.attachments, f.payload, null);
      if (this.p.ctx.closed) return;
    }
  }
  onChannelControl(rec: StreamRec, channel: number): void {
    if (minterOf(channel) !== SIDE) throw new ProtocolError(`ChannelControl for channel ${channel}, which the peer minted`);
    const weSend = receiverSide(channel) !== SIDE;
    const half = weSend ? this.p.handles.txOf.get(channel) : this.p.handles.rxOf.get(channel);
    if (!half || half.ctrl !== null || half.state === "gone") {
      rec.role = weSend ? "to_sender" : "to_receiver";
      this.p.streams.reset(rec.id, ResetCode.LOST);
      return;
    }
    rec.role = weSend ? "to_sender" : "to_receiver";
    rec.half = half.handle;
    half.ctrl = rec.id;
    half.ctrlOpen = true;
    if (half instanceof SenderRec) this.p.senders.senderAttached(half, rec.id);
    else this.p.receivers.receiverAttached(half, rec.id);
  }
  /** A receiver made room (a take, or it ended): streams stalled on it run on. */
  room(r: ReceiverRec): void {
    for (const rec of [...this.p.streams.records.values()]) {
      if (rec.stalledOn !== r.handle || rec.stalled === null) continue;
      const frames = rec.stalled;
      const end = rec.endAfterStall;
      rec.stalled = null;
      rec.stalledOn = null;
      rec.endAfterStall = false;
      this.runFrames(rec, frames, end);
      if (rec.stalled === null) {
        this.p.ctx.out.push({ type: "resume", streamId: rec.id });
        this.p.streams.maybeDrop(rec);
      }
      if (this.p.ctx.closed) return;
    }
  }
}
