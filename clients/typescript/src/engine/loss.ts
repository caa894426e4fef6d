/**
 * Cascading loss (as aqueduct/core/loss.py): what a nack through the creation links does to the halves it reaches.
 *
 * Theory of operation. A half created by a message that was lost can never be reached by the server: a sender
 * ends "lost" (its streams reset LOST, its pending reports nacked), a receiver is lost, and a half the engine no
 * longer tracks is announced with ClosedChannelLost on a uni stream of its own. A ClosedChannelLost from the
 * server loses the unclaimed receiver it names.
 * @module
 */
import { minterOf } from "../wire/channelId.js";
import { ProtocolError, ResetCode } from "../wire/errors.js";
import { encodeFrame } from "../wire/frames.js";
import type { LinkNode } from "./links.js";
import { SIDE, type Parts } from "./context.js";

/** What loss through the creation links does to the halves it reaches. */
export class Loss {
  constructor(private readonly p: Parts) {}

  /** A cascade reached a half (spec: cascading loss detection). */
  onLost(id: number, node: LinkNode): void {
    if (node.isSender) {
      const s = this.p.handles.senders.get(id);
      if (s && s.state !== "gone") {
        if (s.ctrl !== null && !s.ctrlOpen) this.sendClosedChannelLost(node.channel);
        if (s.deferred.length) this.p.senders.reportDeferred(s, "nacked");
        const runs = s.acks.settleAll(s.nextRel, s.nextUnrel);
        if (s.exposed) for (const [reliable, first, stop] of runs) this.p.ctx.appEvents.push({ type: "nacked", sender: s.handle, reliable, first, stop });
        this.p.senders.resetMessageStreams(s, ResetCode.LOST);
        this.p.streams.resetCtrl(s, ResetCode.LOST);
        this.p.senders.senderGone(s, "lost");
        return;
      }
      this.sendClosedChannelLost(node.channel);
      if (s && s.deferred.length) this.p.senders.reportDeferred(s, "nacked");
      return;
    }
    const r = this.p.handles.receivers.get(id);
    if (r && r.state !== "gone") {
      this.p.receivers.loseRx(r);
      return;
    }
    this.sendClosedChannelLost(node.channel);
  }
  sendClosedChannelLost(channel: number): void {
    this.p.streams.openUni(encodeFrame({ type: "ClosedChannelLost", channel: BigInt(channel) }), true);
  }
  onClosedChannelLost(channel: number): void {
    if (minterOf(channel) === SIDE) throw new ProtocolError(`ClosedChannelLost for channel ${channel}, which we minted`);
    const r = this.p.handles.unclaimed.get(channel);
    if (!r) return;
    this.p.handles.unclaimed.delete(channel);
    if (r.state !== "gone") this.p.receivers.loseRx(r);
    r.appDropped = true;
    this.p.receivers.discardQueues([r], true);
    this.p.receivers.maybeForgetReceiver(r);
  }
}
