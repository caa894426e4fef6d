/**
 * The ack and nack ledgers of a receiver and of a sender (as aqueduct/core/acks.py; spec: "AckReliable",
 * "AckNackUnreliable", "SentUnreliable", "FinishSender", "CloseReceiver"; specs/decisions/engine.md, ENG-4 to ENG-7).
 *
 * Receiver: every processed reliable number is owed an ack; AckReliable carries only new acks, counted from
 * the contiguous acked prefix; CloseReceiver carries, from that prefix, everything processed as positive and the
 * rest as negative. Unreliable numbers are decided strictly in order: received -> ack; declared by SentUnreliable
 * and still missing at that declaration's nack deadline -> nack. Sender: applies those frames, returning the
 * runs newly decided (a double ack or an ack of an unsent number is a ProtocolError).
 * @module
 */
import { ProtocolError } from "../wire/errors.js";
import { rangesToRuns, runsToRanges, type Run } from "../wire/ranges.js";
import { RangeSet } from "./rangeSet.js";

/** (reliable, first, stop): message numbers first to stop-1 of one number space. */
export type SpaceRun = [boolean, number, number];

export class ReceiveAcks {
  relAcked = new RangeSet();
  relPrefix = 0;
  relPending = new RangeSet();
  relDone = new RangeSet();
  donePrefix = 0;
  finishCount: number | null = null;
  unrelStart = 0;
  unrelReceived = new RangeSet();
  declared = 0;
  /** [declared total, nack deadline, first deadline] per batch of declarations. */
  declarations: Array<[number, number, number]> = [];
  nackUpto = 0;
  ackDue: number | null = null;

  /** Ranges of reliable numbers this ledger holds (the per-channel cap's figure). */
  reliableRanges(): number {
    return this.relAcked.size + this.relPending.size + this.relDone.size;
  }
  /** Let the oldest unreliable gaps be nacked now, so that at most `keep` received ranges are left. */
  nackOldest(keep: number): void {
    const starts = [...this.unrelReceived].map(([a]) => a);
    if (starts.length > keep) this.nackUpto = Math.max(this.nackUpto, starts[starts.length - Math.max(keep, 1)]!);
  }
  oweAcks(due: number): void {
    if (this.ackDue === null) this.ackDue = due;
  }
  hasReliable(n: number): boolean {
    return n < this.donePrefix || this.relDone.has(n);
  }
  markReliable(n: number): void {
    this.relPending.add(n, n + 1);
    if (n === this.donePrefix && this.relDone.size === 0) {
      this.donePrefix = n + 1;
      return;
    }
    this.relDone.add(n, n + 1);
    this.donePrefix = this.relDone.prefixEnd(this.donePrefix);
    this.relDone.discardBelow(this.donePrefix);
  }
  private doneRuns(start: number): Run[] {
    const runs: Run[] = [];
    if (this.donePrefix > start) runs.push({ first: start, stop: this.donePrefix, positive: true });
    const stop = Math.max(this.relDone.maxStop(), this.donePrefix);
    for (const [a, b, p] of this.relDone.runs(Math.max(start, this.donePrefix), stop)) runs.push({ first: a, stop: b, positive: p });
    return runs;
  }
  takeAckReliable(): number[] | null {
    if (this.relPending.size === 0) return null;
    const start = this.relPrefix;
    const runs = this.relPending.runs(start, this.relPending.maxStop()).map(([a, b, p]) => ({ first: a, stop: b, positive: p }));
    for (const [a, b] of this.relPending) this.relAcked.add(a, b);
    this.relPending.clear();
    this.relPrefix = this.relAcked.prefixEnd(this.relPrefix);
    this.relAcked.discardBelow(this.relPrefix);
    return runsToRanges(start, runs);
  }
  closeRanges(): number[] {
    return runsToRanges(this.relPrefix, this.doneRuns(this.relPrefix));
  }
  owed(): boolean {
    const s = this.unrelStart;
    return this.relPending.size > 0 || s < this.nackUpto || this.unrelReceived.has(s);
  }
  decidedEnd(): number {
    let e = this.unrelStart;
    for (;;) {
      const e2 = this.unrelReceived.prefixEnd(e);
      if (e2 > e) {
        e = e2;
        continue;
      }
      if (e < this.nackUpto) {
        const nxt = this.unrelReceived.nextStartAtOrAfter(e);
        e = nxt === undefined ? this.nackUpto : Math.min(nxt, this.nackUpto);
        continue;
      }
      return e;
    }
  }
  takeAcknack(end: number): number[] | null {
    if (end <= this.unrelStart) return null;
    const runs = this.unrelReceived.runs(this.unrelStart, end).map(([a, b, p]) => ({ first: a, stop: b, positive: p }));
    const ranges = runsToRanges(this.unrelStart, runs);
    this.unrelStart = end;
    this.unrelReceived.discardBelow(end);
    return ranges;
  }
  declare(count: number, deadline: number, coalesce: number): void {
    this.declared += count;
    const last = this.declarations[this.declarations.length - 1];
    if (last !== undefined && deadline - last[2] <= coalesce) {
      this.declarations[this.declarations.length - 1] = [this.declared, deadline, last[2]];
    } else {
      this.declarations.push([this.declared, deadline, deadline]);
    }
  }
  nextNackDeadline(): number | null {
    for (const [upto, deadline] of this.declarations) if (upto > this.nackUpto) return deadline;
    return null;
  }
  nacksDue(now: number): boolean {
    let moved = false;
    while (this.declarations.length && this.declarations[0]![1] <= now) {
      const upto = this.declarations.shift()![0];
      if (upto > this.nackUpto) {
        this.nackUpto = upto;
        moved = true;
      }
    }
    return moved;
  }
  finish(count: number): void {
    if (this.relDone.maxStop() > count || this.donePrefix > count) {
      throw new ProtocolError(`FinishSender count ${count} below a message already received`);
    }
    if (this.unrelReceived.maxStop() > this.declared || this.unrelStart > this.declared) {
      throw new ProtocolError("FinishSender before declaring every unreliable message received");
    }
    this.finishCount = count;
  }
  allAccounted(): boolean {
    if (this.finishCount === null) return false;
    return this.donePrefix >= this.finishCount && this.decidedEnd() >= this.declared;
  }
}

export class SendAcks {
  relAcked = new RangeSet();
  relPrefix = 0;
  unrelResolved = 0;

  private advancePrefix(): void {
    this.relPrefix = this.relAcked.prefixEnd(this.relPrefix);
    this.relAcked.discardBelow(this.relPrefix);
  }
  /** Apply an AckReliable; return the newly acked runs. */
  ackReliable(ranges: number[], nextRel: number, channel: number): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (const { first, stop, positive } of rangesToRuns(this.relPrefix, ranges)) {
      if (!positive) continue;
      if (stop > nextRel) throw new ProtocolError(`AckReliable acks unsent message ${stop - 1} on channel ${channel}`);
      if (this.relAcked.overlaps(first, stop)) throw new ProtocolError(`AckReliable acks message twice on channel ${channel}`);
      this.relAcked.add(first, stop);
      out.push([first, stop]);
    }
    this.advancePrefix();
    return out;
  }
  /** Apply an AckNackUnreliable; return [first, stop, acked] runs. */
  acknackUnreliable(ranges: number[], nextUnrel: number, channel: number): Array<[number, number, boolean]> {
    const runs = rangesToRuns(this.unrelResolved, ranges);
    const end = runs.length ? runs[runs.length - 1]!.stop : this.unrelResolved;
    if (end > nextUnrel) throw new ProtocolError(`AckNackUnreliable covers unsent message ${end - 1} on channel ${channel}`);
    this.unrelResolved = end;
    return runs.map((r) => [r.first, r.stop, r.positive]);
  }
  /** Apply a CloseReceiver: [newly acked, nacked] reliable runs, implicit nacks included. */
  closeReceiver(ranges: number[], nextRel: number, channel: number): [Array<[number, number]>, Array<[number, number]>] {
    const acked: Array<[number, number]> = [];
    const nacked: Array<[number, number]> = [];
    let end = this.relPrefix;
    for (const { first, stop, positive } of rangesToRuns(this.relPrefix, ranges)) {
      end = stop;
      if (stop > nextRel) throw new ProtocolError(`CloseReceiver covers unsent message ${stop - 1} on channel ${channel}`);
      for (const [a, b, known] of this.relAcked.runs(first, stop)) {
        if (known) {
          if (!positive) throw new ProtocolError(`CloseReceiver nacks acked message ${a} on channel ${channel}`);
          continue;
        }
        (positive ? acked : nacked).push([a, b]);
      }
    }
    for (const [a, b, known] of this.relAcked.runs(end, nextRel)) if (!known) nacked.push([a, b]);
    for (const [a, b] of acked) this.relAcked.add(a, b);
    this.advancePrefix();
    return [acked, nacked];
  }
  settleUnreliable(nextUnrel: number): SpaceRun | null {
    if (nextUnrel <= this.unrelResolved) return null;
    const first = this.unrelResolved;
    this.unrelResolved = nextUnrel;
    return [false, first, nextUnrel];
  }
  /** Every message not yet acked or nacked, now counted as nacked. */
  settleAll(nextRel: number, nextUnrel: number): SpaceRun[] {
    const runs: SpaceRun[] = [];
    for (const [a, b, known] of this.relAcked.runs(this.relPrefix, nextRel)) if (!known) runs.push([true, a, b]);
    this.relPrefix = nextRel;
    this.relAcked.clear();
    const u = this.settleUnreliable(nextUnrel);
    if (u) runs.push(u);
    return runs;
  }
}
