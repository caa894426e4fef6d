/**
 * A Message received (as aqueduct/core/intake.py): checked, its attachments turned into halves, queued.
 *
 * Theory of operation. A Message for a channel we have no receiver for makes an unclaimed receiver (unless a ghost
 * filter says it is late, or we minted the channel). Numbers are checked against the receiver's ledger (twice, past
 * a FinishSender count, a second on a oneshot: protocol errors). The queue is bounded in messages and bytes: an
 * unreliable message over the bound is dropped (and nacked later), a reliable one throws QueueFull so its stream
 * stalls. Attachments the server minted become halves here: a receiver claims an unclaimed one or is created, a
 * sender opens its control stream at once. The ack ranges a receiver keeps are capped (maxAckRanges).
 * @module
 */
import { ENTRYPOINT, isOneshot, minterOf, receiverSide } from "../wire/channelId.js";
import { CloseCode, ProtocolError } from "../wire/errors.js";
import { encodeFrame } from "../wire/frames.js";
import { ReceiverRec } from "./halves.js";
import type { Attachment } from "./types.js";
import { SIDE, safe, safeAll, type Parts } from "./context.js";

/** A reliable Message found its receiver's queue full: incoming.ts stalls its stream. */
export class QueueFull extends Error {
  constructor(readonly receiver: number) {
    super("queue full");
  }
}

/** Takes in one received Message. */
export class Intake {
  constructor(private readonly p: Parts) {}

  onMessage(channelBig: bigint, numberBig: bigint, attachBig: bigint[], payload: Uint8Array, sid: number | null): void {
    const channel = safe(channelBig, "channel ID");
    const n = safe(numberBig, "message number");
    const reliable = sid !== null;
    if (n !== 0 && isOneshot(channel)) throw new ProtocolError(`message number ${n} on oneshot channel ${channel}`);
    let r = this.p.handles.rxOf.get(channel);
    if (!r) {
      if (receiverSide(channel) !== SIDE) throw new ProtocolError(`Message on channel ${channel}, whose receiver would be the sender's own side`);
      if (minterOf(channel) === SIDE || this.p.handles.unclaimed.has(channel) || this.p.handles.handedOut.has(channel)) return;
      if (this.p.handles.discarded.has(channel)) return; // (late: a ghost would be made and discarded after a round trip)
      if (this.p.handles.unclaimed.size >= this.p.ctx.config.maxPendingReceivers) {
        throw new ProtocolError(`more than maxPendingReceivers=${this.p.ctx.config.maxPendingReceivers} auto-created receivers`, CloseCode.LIMIT_EXCEEDED);
      }
      r = this.p.handles.createRemoteReceiver(channel, false);
      this.p.handles.unclaimed.set(channel, r);
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
    const size = payload.length + this.p.ctx.config.heldItemOverhead;
    if (r.queue.length + 1 > this.p.ctx.config.maxReceiverQueueMessages || r.queueBytes + size > this.p.ctx.config.maxReceiverQueueBytes) {
      if (!reliable) return;
      if (!r.queue.length) throw new ProtocolError(`a message on channel ${channel} is larger than a receiver queue may hold`, CloseCode.LIMIT_EXCEEDED);
      throw new QueueFull(r.handle);
    }
    const attachments = this.takeAttachments(safeAll(attachBig, "channel ID"));
    r.messagesSeen += 1;
    if (reliable) acks.markReliable(n);
    else acks.unrelReceived.add(n, n + 1);
    acks.oweAcks(this.p.ctx.now + this.p.ctx.config.ackDelay);
    this.checkRanges(r);
    const wasEmpty = r.queue.length === 0;
    r.queue.push({ delivered: { payload, attachments, channel, number: n, delivery: reliable ? "ordered" : "unreliable" }, sid });
    r.queueBytes += size;
    if (r.state === "close_wait") this.p.receivers.discardQueues([r], false);
    else if (wasEmpty && r.exposed && !r.appDropped) this.p.ctx.appEvents.push({ type: "message_available", receiver: r.handle });
    if (r.state === "finishing") this.p.receivers.checkFinished(r);
    this.p.receivers.schedule(r);
  }
  /** The per-channel cap on ack ranges: reliable gaps past it close; the oldest unreliable ones are nacked now. */
  checkRanges(r: ReceiverRec): void {
    const acks = r.acks;
    const cap = this.p.ctx.config.maxAckRanges;
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
      this.p.receivers.flushAcks(r);
    }
  }
  takeAttachments(ids: number[]): Attachment[] {
    return ids.map((a, index) => {
      if (minterOf(a) === SIDE) throw new ProtocolError(`attachment ${a} was minted by the side receiving it`);
      if (a === ENTRYPOINT) throw new ProtocolError("the entrypoint channel cannot be attached");
      if (receiverSide(a) === SIDE) {
        let h: number;
        const pending = this.p.handles.unclaimed.get(a);
        if (pending) {
          this.p.handles.unclaimed.delete(a);
          pending.claimed = true;
          h = pending.handle;
        } else if (this.p.handles.rxOf.has(a) || this.p.handles.handedOut.has(a)) {
          throw new ProtocolError(`receiver of channel ${a} handed out twice`);
        } else {
          h = this.p.handles.createRemoteReceiver(a, true).handle;
        }
        this.p.handles.rememberHandedOut(a);
        return { index, channel: a, isSender: false, handle: h };
      }
      if (this.p.handles.txOf.has(a)) throw new ProtocolError(`sender of channel ${a} attached twice`);
      if (this.p.handles.senders.size + this.p.handles.receivers.size + 1 > this.p.ctx.config.maxChannels) {
        throw new ProtocolError(`the peer made us exceed maxChannels=${this.p.ctx.config.maxChannels}`, CloseCode.LIMIT_EXCEEDED);
      }
      const s = this.p.handles.addSender(a, true, false);
      s.ctrl = this.p.streams.openBidi(encodeFrame({ type: "ChannelControl", channel: BigInt(a) }), "to_sender", s.handle);
      s.ctrlOpen = true;
      return { index, channel: a, isSender: true, handle: s.handle };
    });
  }
}
