/**
 * The per-channel records of the engine: one local sender or receiver each (as aqueduct/core/sender.py and
 * receiver.py), with their state tables. States move only through `move`, which checks the table.
 *
 * Sender: open --finish--> finish_wait --control stream--> finished (FinishSender+FIN sent);
 *         open|finish_wait --cancel--> cancel_wait --control stream--> cancelled (control stream reset 1);
 *         any but gone --CloseReceiver, a reset, cascading loss, connection lost--> gone.
 * Receiver: open --FinishSender--> finishing; open|finishing --close before the control stream--> close_wait;
 *           any but gone --closed, lost, connection lost--> gone.
 * @module
 */
import { isOneshot } from "../wire/channelId.js";
import { SendAcks, ReceiveAcks, type SpaceRun } from "./acks.js";
import type { Delivered, EndReason } from "./types.js";

export type SState = "open" | "finish_wait" | "finished" | "cancel_wait" | "cancelled" | "gone";
export type RState = "open" | "finishing" | "close_wait" | "gone";

const S_MOVES: Record<SState, readonly SState[]> = {
  open: ["finish_wait", "cancel_wait", "gone"],
  finish_wait: ["finished", "cancel_wait", "gone"],
  finished: ["gone"],
  cancel_wait: ["cancelled", "gone"],
  cancelled: ["gone"],
  gone: [],
};
const R_MOVES: Record<RState, readonly RState[]> = {
  open: ["finishing", "close_wait", "gone"],
  finishing: ["close_wait", "gone"],
  close_wait: ["gone"],
  gone: [],
};

/** An illegal state move: a bug in the engine, never the peer's doing. */
export class IllegalTransition extends Error {}

export class SenderRec {
  state: SState = "open";
  ctrl: number | null = null;
  /** Our direction of the control stream can still be written. */
  ctrlOpen = false;
  nextRel = 0;
  nextUnrel = 0;
  readonly acks = new SendAcks();
  undeclared = 0;
  orderedSid: number | null = null;
  /** Message number -> its own stream, for unordered messages not yet acked. */
  readonly unorderedSids = new Map<number, number>();
  /** Acks held back while unreachable. */
  deferred: SpaceRun[] = [];
  appDropped = false;
  endReason: EndReason | null = null;
  endReported = false;
  readonly oneshot: boolean;

  constructor(readonly handle: number, readonly channel: number, public reachable: boolean, public exposed: boolean) {
    this.oneshot = isOneshot(channel);
  }
  move(to: SState): void {
    if (!S_MOVES[this.state].includes(to)) throw new IllegalTransition(`sender ${this.handle}: ${this.state} -> ${to}`);
    this.state = to;
  }
}

export interface Queued {
  delivered: Delivered;
  /** The stream it arrived on (null: a datagram). */
  sid: number | null;
}

export class ReceiverRec {
  state: RState = "open";
  ctrl: number | null = null;
  ctrlOpen = false;
  readonly acks = new ReceiveAcks();
  queue: Queued[] = [];
  queueBytes = 0;
  messagesSeen = 0;
  closeReason: EndReason | null = null;
  endReason: EndReason | null = null;
  endReported = false;
  appDropped = false;
  readonly oneshot: boolean;

  constructor(readonly handle: number, readonly channel: number, public exposed: boolean, public claimed: boolean) {
    this.oneshot = isOneshot(channel);
  }
  move(to: RState): void {
    if (!R_MOVES[this.state].includes(to)) throw new IllegalTransition(`receiver ${this.handle}: ${this.state} -> ${to}`);
    this.state = to;
  }
}
