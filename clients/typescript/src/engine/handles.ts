/**
 * The halves by handle and by channel, and the ghost filters (as aqueduct/core/halves.py).
 *
 * Theory of operation. Every half the engine knows has a handle (the application's name for it) and a channel; a
 * channel has at most one live sender and one live receiver here (`txOf`, `rxOf`). A Message for a peer-minted
 * channel we have no receiver for makes an "unclaimed" receiver until the message that creates it comes (bounded:
 * maxPendingReceivers). Two bounded filters stop late messages from making ghost receivers: the channels whose
 * receivers were handed out in messages (maxHandedOut) and those whose receivers ended lately
 * (discardedFilterSize); past its size a filter forgets its oldest, which the spec allows (false negatives only).
 * `appSender`/`appReceiver` are the application's way in: they reject unknown or dropped handles.
 * @module
 */
import { CloseCode, ProtocolError } from "../wire/errors.js";
import { encodeFrame } from "../wire/frames.js";
import { ChannelClosed, ConnectionLost } from "../errors.js";
import { ReceiverRec, SenderRec } from "./halves.js";
import type { Parts } from "./context.js";

/** The halves by handle and channel, and the ghost filters; the only writer of these tables. */
export class Handles {
  constructor(private readonly p: Parts) {}

  nextHandle = 1;
  readonly senders = new Map<number, SenderRec>();
  readonly receivers = new Map<number, ReceiverRec>();
  readonly txOf = new Map<number, SenderRec>();
  readonly rxOf = new Map<number, ReceiverRec>();
  /** Auto-created receivers whose creating message has not come, by channel. */
  readonly unclaimed = new Map<number, ReceiverRec>();
  /** Peer-minted channels whose receiver a message handed out (no ghost for them): the latest `maxHandedOut`. */
  readonly handedOut = new Set<number>();
  /** Channels whose receiver ended lately (the spec's filter of recently discarded receivers), oldest first. */
  readonly discarded = new Set<number>();

  addSender(channel: number, reachable: boolean, exposed: boolean): SenderRec {
    const s = new SenderRec(this.nextHandle++, channel, reachable, exposed);
    this.senders.set(s.handle, s);
    this.txOf.set(channel, s);
    return s;
  }
  addReceiver(channel: number, exposed: boolean, claimed: boolean): ReceiverRec {
    const r = new ReceiverRec(this.nextHandle++, channel, exposed, claimed);
    this.receivers.set(r.handle, r);
    this.rxOf.set(channel, r);
    return r;
  }
  appSender(handle: number): SenderRec {
    if (this.p.ctx.closed) throw new ConnectionLost();
    const s = this.senders.get(handle);
    if (!s || s.appDropped) throw new ChannelClosed(`unknown or dropped sender ${handle}`);
    return s;
  }
  appReceiver(handle: number): ReceiverRec {
    const r = this.receivers.get(handle);
    if (!r || r.appDropped) throw new ChannelClosed(`unknown or dropped receiver ${handle}`);
    return r;
  }
  /** Add to a bounded filter: past `size` entries the oldest goes. */
  remember(filter: Set<number>, channel: number, size: number): void {
    if (size <= 0) return;
    filter.add(channel);
    if (filter.size > size) filter.delete(filter.values().next().value!);
  }
  /** Remember a handed-out channel; past the cap the oldest is forgotten (a possible ghost later, which the spec
   * allows: a filter may have false negatives, never false positives). */
  rememberHandedOut(channel: number): void {
    this.remember(this.handedOut, channel, this.p.ctx.config.maxHandedOut);
  }
  createRemoteReceiver(channel: number, claimed: boolean): ReceiverRec {
    if (this.senders.size + this.receivers.size + 1 > this.p.ctx.config.maxChannels) {
      throw new ProtocolError(`the peer made us exceed maxChannels=${this.p.ctx.config.maxChannels}`, CloseCode.LIMIT_EXCEEDED);
    }
    const r = this.addReceiver(channel, false, claimed);
    r.ctrl = this.p.streams.openBidi(encodeFrame({ type: "ChannelControl", channel: BigInt(channel) }), "to_receiver", r.handle);
    r.ctrlOpen = true;
    return r;
  }
}
