/**
 * The senders' life (as aqueduct/core/sending.py): send, finish, cancel, the acks and nacks they report.
 *
 * Theory of operation. Ordered messages of a sender share one uni stream; an unordered message is a uni stream of
 * its own (FIN after it); an unreliable one is a datagram in its own number space, declared by SentUnreliable
 * within min(sentUnreliableDelay, RTT/2) or when the control stream attaches. Attachments mint channel IDs and
 * create the half we keep, unreachable, linked from the message (links.ts). Finish and cancel wait for the
 * control stream the server opens. Each message number is reported once: acked (held back while the sender is
 * unreachable) or nacked; a nack cascades loss through the creation links (loss.ts). A CloseReceiver or a reset of
 * the control stream ends the sender.
 * @module
 */
import { ENTRYPOINT } from "../wire/channelId.js";
import { CloseCode, ProtocolError, ResetCode } from "../wire/errors.js";
import { encodeFrame, encodeFrames, encodeMessage, type Frame } from "../wire/frames.js";
import { concat } from "../wire/varint.js";
import { ChannelClosed, LimitExceeded, errorForReason } from "../errors.js";
import { msgKey } from "./links.js";
import { SenderRec } from "./halves.js";
import type { AttachKind, Delivery, EndReason, SendResult } from "./types.js";
import { SIDE, VERSION_BYTES, SENT_NONE, safeAll, type Parts } from "./context.js";

/** The senders: what the application sends, and what the server says of it. */
export class Senders {
  constructor(private readonly p: Parts) {}

  /** Send one message on `sender`; `attach` creates new channels (we keep the other half of each). */
  send(sender: number, payload: Uint8Array, delivery: Delivery = "ordered", attach: readonly AttachKind[] = []): SendResult {
    const s = this.p.handles.appSender(sender);
    if (s.state !== "open") throw this.sendError(s);
    if (payload.length > this.p.ctx.config.maxFrameSize) {
      throw new LimitExceeded(`payload of ${payload.length} bytes exceeds maxFrameSize ${this.p.ctx.config.maxFrameSize}`);
    }
    if (attach.length && this.p.handles.senders.size + this.p.handles.receivers.size + attach.length > this.p.ctx.config.maxChannels) {
      throw new LimitExceeded(`more than maxChannels=${this.p.ctx.config.maxChannels} channels`);
    }
    const reliable = delivery !== "unreliable";
    const number = reliable ? s.nextRel : s.nextUnrel;
    const saved = this.p.ctx.minter.save();
    const ids = attach.map((k) => {
      const givesSender = k === "sender" || k === "oneshot_sender";
      return this.p.ctx.minter.mint(givesSender ? SIDE : "server", k.startsWith("oneshot"));
    });
    let data = encodeMessage(s.channel, number, ids, payload);
    if (!reliable) {
      if (this.p.ctx.needVersion) data = concat([VERSION_BYTES, data]);
      if (data.length > this.p.ctx.config.maxDatagramPayload) {
        this.p.ctx.minter.restore(saved);
        throw new LimitExceeded(`unreliable message encodes to ${data.length} bytes, over maxDatagramPayload ${this.p.ctx.config.maxDatagramPayload}`);
      }
    }
    const created = ids.map((id, i) => {
      const k = attach[i]!;
      const givesSender = k === "sender" || k === "oneshot_sender";
      const h = givesSender ? this.p.handles.addReceiver(id, true, true).handle : this.p.handles.addSender(id, false, true).handle;
      this.p.ctx.links.addUnreachable(h, id, !givesSender);
      return h;
    });
    if (created.length) this.p.ctx.links.addLink(s.handle, s.channel, msgKey(reliable, number), created);
    let sid: number | null = null;
    if (delivery === "ordered") {
      if (s.orderedSid === null) sid = s.orderedSid = this.p.streams.openUni(data, false);
      else {
        sid = s.orderedSid;
        this.p.streams.writeRaw(sid, data, false);
      }
      s.nextRel += 1;
    } else if (delivery === "unordered") {
      sid = this.p.streams.openUni(data, true);
      s.unorderedSids.set(number, sid);
      s.nextRel += 1;
    } else {
      this.p.ctx.out.push({ type: "datagram", data });
      s.nextUnrel += 1;
      s.undeclared += 1;
      if (s.ctrl !== null) {
        const at = this.p.ctx.now + Math.min(this.p.ctx.rtt / 2, this.p.ctx.config.sentUnreliableDelay);
        const key = `su:${s.handle}`;
        const cur = this.p.ctx.timers.get(key);
        if (cur === undefined || at < cur) this.p.ctx.timers.set(key, at);
      }
    }
    if (s.oneshot) this.finishSender(s);
    return { number, created, streamId: sid };
  }
  finishSender(s: SenderRec): void {
    if (s.state === "finish_wait" || s.state === "finished" || s.endReason === "finished") return;
    if (s.state !== "open") throw this.sendError(s);
    s.move("finish_wait");
    if (s.orderedSid !== null) this.p.streams.writeRaw(s.orderedSid, new Uint8Array(0), true);
    if (s.ctrl !== null) this.doFinish(s);
  }
  doFinish(s: SenderRec): void {
    const frames: Frame[] = [];
    if (s.undeclared) {
      frames.push({ type: "SentUnreliable", count: BigInt(s.undeclared) });
      s.undeclared = 0;
    }
    frames.push({ type: "FinishSender", reliableCount: BigInt(s.nextRel) });
    this.p.ctx.timers.delete(`su:${s.handle}`);
    s.move("finished");
    s.ctrlOpen = false;
    this.p.streams.write(s.ctrl!, encodeFrames(frames), true);
  }
  cancelSender(s: SenderRec): void {
    if (s.state !== "open" && s.state !== "finish_wait") return;
    s.move("cancel_wait");
    this.resetMessageStreams(s, ResetCode.CANCELLED);
    this.p.ctx.timers.delete(`su:${s.handle}`);
    if (s.ctrl !== null) this.doCancel(s);
  }
  doCancel(s: SenderRec): void {
    s.move("cancelled");
    this.p.streams.resetCtrl(s, ResetCode.CANCELLED);
  }
  resetMessageStreams(s: SenderRec, code: number): void {
    if (s.orderedSid !== null) {
      this.p.ctx.out.push({ type: "reset", streamId: s.orderedSid, code });
      s.orderedSid = null;
    }
    for (const sid of s.unorderedSids.values()) this.p.ctx.out.push({ type: "reset", streamId: sid, code });
    s.unorderedSids.clear();
  }
  senderAttached(s: SenderRec, sid: number): void {
    if (s.state === "open" && !s.undeclared && s.channel !== ENTRYPOINT) this.p.streams.owed.set(sid, SENT_NONE);
    if (s.state === "finish_wait") this.doFinish(s);
    else if (s.state === "cancel_wait") this.doCancel(s);
    else if (s.undeclared) this.sentUnreliableDue(s.handle);
  }
  sentUnreliableDue(handle: number): void {
    const s = this.p.handles.senders.get(handle);
    if (!s || s.state !== "open" || !s.ctrlOpen || !s.undeclared || s.ctrl === null) return;
    this.p.streams.write(s.ctrl, encodeFrame({ type: "SentUnreliable", count: BigInt(s.undeclared) }));
    s.undeclared = 0;
  }
  senderFrame(s: SenderRec, frame: Frame): void {
    if (frame.type === "AckReliable") {
      for (const [a, b] of s.acks.ackReliable(safeAll(frame.ranges, "range"), s.nextRel, s.channel)) this.report(s, true, true, a, b);
      if (s.acks.relAcked.size > this.p.ctx.config.maxAckRanges) {
        throw new ProtocolError(`more than maxAckRanges=${this.p.ctx.config.maxAckRanges} ranges of acked message numbers on channel ${s.channel}`,
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
      this.p.streams.resetCtrl(s, ResetCode.CANCELLED);
      this.senderGone(s, reason);
    }
  }
  senderCtrlReset(s: SenderRec, code: number): void {
    for (const [reliable, first, stop] of s.acks.settleAll(s.nextRel, s.nextUnrel)) this.report(s, false, reliable, first, stop);
    this.resetMessageStreams(s, ResetCode.LOST);
    this.p.streams.resetCtrl(s, ResetCode.LOST);
    this.senderGone(s, code === ResetCode.LOST ? "lost" : "receiver dropped");
  }
  /** Report a run once: acks of an unreachable sender wait; nacks cascade at once. */
  report(s: SenderRec, acked: boolean, reliable: boolean, first: number, stop: number): void {
    if (reliable) for (const n of [...s.unorderedSids.keys()]) if (first <= n && n < stop) s.unorderedSids.delete(n);
    const keys = this.p.ctx.links.keysIn(s.handle, reliable, first, stop);
    if (acked) {
      if (s.reachable) {
        if (s.exposed) this.p.ctx.appEvents.push({ type: "acked", sender: s.handle, reliable, first, stop });
      } else {
        s.deferred.push([reliable, first, stop]);
      }
      if (keys.length) this.p.ctx.links.acked(s.handle, keys, (id) => this.onReachable(id));
    } else {
      if (s.exposed) this.p.ctx.appEvents.push({ type: "nacked", sender: s.handle, reliable, first, stop });
      if (keys.length) this.p.ctx.links.nacked(s.handle, keys, (id, node) => this.p.loss.onLost(id, node));
    }
  }
  onReachable(id: number): void {
    const s = this.p.handles.senders.get(id);
    if (s && !s.reachable) {
      s.reachable = true;
      this.reportDeferred(s, "acked");
    }
  }
  reportDeferred(s: SenderRec, type: "acked" | "nacked"): void {
    const deferred = s.deferred;
    s.deferred = [];
    if (s.exposed) for (const [reliable, first, stop] of deferred) this.p.ctx.appEvents.push({ type, sender: s.handle, reliable, first, stop });
    this.maybeForgetSender(s);
  }
  senderGone(s: SenderRec, reason: EndReason): void {
    s.move("gone");
    if (this.p.handles.txOf.get(s.channel) === s) this.p.handles.txOf.delete(s.channel);
    this.p.ctx.timers.delete(`su:${s.handle}`);
    if (s.ctrl !== null) this.p.streams.unbind(s.ctrl);
    s.endReason = reason;
    if (!s.endReported) {
      s.endReported = true;
      if (s.exposed && !s.appDropped) this.p.ctx.appEvents.push({ type: "sender_ended", sender: s.handle, reason });
    }
    this.maybeForgetSender(s);
  }
  maybeForgetSender(s: SenderRec): void {
    if (s.state === "gone" && s.appDropped && !s.deferred.length) this.p.handles.senders.delete(s.handle);
  }
  exposeSender(handle: number): void {
    const s = this.p.handles.senders.get(handle);
    if (s && !s.exposed) {
      s.exposed = true;
      if (s.endReported && s.endReason !== null) this.p.ctx.appEvents.push({ type: "sender_ended", sender: s.handle, reason: s.endReason });
    }
  }
  abandonSender(handle: number, lost: boolean): void {
    const s = this.p.handles.senders.get(handle);
    if (!s) return;
    s.appDropped = true;
    if (lost && s.state !== "gone") this.senderCtrlReset(s, ResetCode.LOST);
    else if (s.state === "open") this.cancelSender(s);
    this.maybeForgetSender(s);
  }
  sendError(s: SenderRec): Error {
    if (s.endReason !== null && s.endReported) return errorForReason(s.endReason, "sender");
    return new ChannelClosed("the sender was finished or cancelled");
  }
}
