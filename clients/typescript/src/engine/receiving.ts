/**
 * The receivers' life (as aqueduct/core/receiving.py): the control stream, acks and nacks, the close procedures.
 *
 * Theory of operation. A receiver acks within ackDelay and nacks unreliable numbers still missing at
 * max(nackTimeout, 2 RTT) after their SentUnreliable, on one timer per receiver ("rx:<handle>"). It finishes once
 * the FinishSender count is accounted for; it closes with AckNackUnreliable + CloseReceiver + FIN (waiting for its
 * control stream if it has none yet); a "lost" reset ends it at once. Its queue goes unless the channel finished,
 * and the halves inside discarded messages go with it (nested queues too).
 * @module
 */
import { ResetCode } from "../wire/errors.js";
import { encodeFrames, type Frame } from "../wire/frames.js";
import { ReceiverRec } from "./halves.js";
import type { Attachment, EndReason } from "./types.js";
import { EMPTY_ACKNACK, safe, bigs, type Parts } from "./context.js";

/** The receivers: acks, nacks and how they end. */
export class Receivers {
  constructor(private readonly p: Parts) {}

  receiverAttached(r: ReceiverRec, _sid: number): void {
    if (r.state === "close_wait") this.closeRx(r, r.closeReason!);
    else {
      this.p.streams.owed.set(r.ctrl!, EMPTY_ACKNACK);
      this.schedule(r);
    }
  }
  receiverFrame(r: ReceiverRec, frame: Frame): void {
    if (frame.type === "SentUnreliable") {
      const count = safe(frame.count, "SentUnreliable count");
      if (!count) return;
      r.acks.declare(count, this.p.ctx.now + Math.max(this.p.ctx.config.nackTimeout, 2 * this.p.ctx.rtt), this.p.ctx.config.ackDelay);
      this.schedule(r);
    } else if (frame.type === "FinishSender") {
      r.acks.finish(safe(frame.reliableCount, "FinishSender count"));
      r.move("finishing");
      this.checkFinished(r);
    }
  }
  schedule(r: ReceiverRec): void {
    const key = `rx:${r.handle}`;
    if (r.state === "gone" || !r.ctrlOpen) {
      this.p.ctx.timers.delete(key);
      return;
    }
    const acks = r.acks;
    let when: number | null = null;
    if (acks.owed()) when = acks.ackDue ?? this.p.ctx.now;
    const deadline = acks.nextNackDeadline();
    if (deadline !== null) when = when === null ? deadline : Math.min(when, deadline);
    if (when === null) this.p.ctx.timers.delete(key);
    else this.p.ctx.timers.set(key, when);
  }
  receiverDue(handle: number): void {
    const r = this.p.handles.receivers.get(handle);
    if (!r || r.state === "gone" || !r.ctrlOpen) return;
    const acks = r.acks;
    if (acks.nacksDue(this.p.ctx.now) || (acks.ackDue !== null && acks.ackDue <= this.p.ctx.now)) this.flushAcks(r);
    if (r.state === "finishing") this.checkFinished(r);
    this.schedule(r);
  }
  flushAcks(r: ReceiverRec): void {
    const acks = r.acks;
    const frames: Frame[] = [];
    const rel = acks.takeAckReliable();
    if (rel !== null) frames.push({ type: "AckReliable", ranges: bigs(rel) });
    const unrel = acks.takeAcknack(acks.decidedEnd());
    if (unrel !== null) frames.push({ type: "AckNackUnreliable", ranges: bigs(unrel) });
    acks.ackDue = null;
    if (frames.length) this.p.streams.write(r.ctrl!, encodeFrames(frames));
  }
  checkFinished(r: ReceiverRec): void {
    if (r.state === "finishing" && r.acks.allAccounted()) this.closeRx(r, "finished");
  }
  /** The close procedure (waits for the control stream); the queue goes unless the channel finished. */
  closeRx(r: ReceiverRec, reason: EndReason, discard = true): void {
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
    this.p.streams.write(r.ctrl, encodeFrames(frames), true);
    this.endRx(r, reason);
  }
  loseRx(r: ReceiverRec): void {
    if (r.state === "gone") return;
    this.resetLost(r);
    this.discardQueues([r], true);
  }
  resetLost(r: ReceiverRec): void {
    this.p.streams.resetCtrl(r, ResetCode.LOST);
    this.endRx(r, "lost");
  }
  endRx(r: ReceiverRec, reason: EndReason): void {
    r.move("gone");
    r.endReason = reason;
    if (this.p.handles.rxOf.get(r.channel) === r) this.p.handles.rxOf.delete(r.channel);
    this.p.handles.remember(this.p.handles.discarded, r.channel, this.p.ctx.config.discardedFilterSize);
    this.p.ctx.timers.delete(`rx:${r.handle}`);
    if (r.ctrl !== null) this.p.streams.unbind(r.ctrl);
    const ghost = this.p.handles.handedOut.has(r.channel);
    if (!r.claimed && (reason === "lost" || ghost) && this.p.handles.unclaimed.get(r.channel) === r) {
      this.p.handles.unclaimed.delete(r.channel);
      r.appDropped = true;
      if (reason === "finished") this.discardQueues([r], false);
    }
    this.p.incoming.room(r);
    this.reportRxEnd(r);
    this.maybeForgetReceiver(r);
  }
  reportRxEnd(r: ReceiverRec): void {
    if (r.exposed && !r.endReported && r.endReason !== null) {
      r.endReported = true;
      if (!r.appDropped) this.p.ctx.appEvents.push({ type: "receiver_ended", receiver: r.handle, reason: r.endReason });
    }
  }
  maybeForgetReceiver(r: ReceiverRec): void {
    if (r.state === "gone" && r.appDropped && this.p.handles.unclaimed.get(r.channel) !== r) this.p.handles.receivers.delete(r.handle);
  }
  /** Drop every queued message of `start`, and the halves they carry, through nested queues. */
  discardQueues(start: ReceiverRec[], lost: boolean): void {
    const work = [...start];
    while (work.length) {
      const r = work.pop()!;
      const queue = r.queue;
      r.queue = [];
      r.queueBytes = 0;
      if (!this.p.ctx.closed) this.p.incoming.room(r);
      for (const { delivered } of queue) {
        for (const att of delivered.attachments) {
          if (att.isSender) {
            this.p.senders.abandonSender(att.handle, lost);
            continue;
          }
          const inner = this.p.handles.receivers.get(att.handle);
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
  expose(att: Attachment): void {
    if (att.isSender) return this.p.senders.exposeSender(att.handle);
    const r = this.p.handles.receivers.get(att.handle);
    if (r && !r.exposed) {
      r.exposed = true;
      if (r.queue.length) this.p.ctx.appEvents.push({ type: "message_available", receiver: r.handle });
      this.reportRxEnd(r);
    }
  }
}
