/**
 * The stream records and our writes (as aqueduct/core/streams.py).
 *
 * Theory of operation. Streams are numbered as QUIC does: we open client bidi streams 4, 8, ... (0 is the
 * connection control stream) and uni streams 2, 6, ...; every write is a "send" command, in order. A stream we
 * open starts with a Version frame until the server's headers came. A record lives while either direction is
 * open (the connection's forever) and while frames of it wait in a stall. A reset of a control stream we opened
 * waits (`pendingReset`) until the peer sent a frame on it, so the peer has read our ChannelControl first. `owed`
 * holds a control stream's first frame that goes out at the next drain unless something else was written first.
 * @module
 */
import type { Frame } from "../wire/frames.js";
import { FrameReader } from "../wire/reader.js";
import { concat } from "../wire/varint.js";
import { ReceiverRec, SenderRec } from "./halves.js";
import { VERSION_BYTES, isUni, openedByUs, type Parts } from "./context.js";

export type Role = "connection" | "new_bidi" | "new_uni" | "messages" | "lost_notice" | "to_sender" | "to_receiver";

/** One stream the engine tracks (control streams and the connection's; message streams we write need none). */
export interface StreamRec {
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

/** The stream records and every write to a stream. */
export class StreamTable {
  constructor(private readonly p: Parts) {}

  readonly records = new Map<number, StreamRec>();
  readonly owed = new Map<number, Uint8Array>();
  nextBidi = 4;
  nextUni = 2;

  newRec(id: number, role: Role, half: number | null = null): StreamRec {
    return {
      id, role, reader: new FrameReader(this.p.ctx.config.maxFrameSize), half, framesSeen: 0, inDone: isUni(id) && openedByUs(id),
      outStarted: false, outDone: isUni(id) && !openedByUs(id), pendingReset: null, finalSeen: false, stalled: null,
      stalledOn: null, endAfterStall: false,
    };
  }
  writeRaw(sid: number, data: Uint8Array, end: boolean): void {
    this.p.ctx.out.push({ type: "send", streamId: sid, data, end });
  }
  openUni(data: Uint8Array, end: boolean): number {
    const sid = this.nextUni;
    this.nextUni += 4;
    this.writeRaw(sid, this.p.ctx.needVersion ? concat([VERSION_BYTES, data]) : data, end);
    return sid;
  }
  openBidi(data: Uint8Array, role: Role, half: number): number {
    const sid = this.nextBidi;
    this.nextBidi += 4;
    const rec = this.newRec(sid, role, half);
    rec.outStarted = true;
    this.records.set(sid, rec);
    this.writeRaw(sid, this.p.ctx.needVersion ? concat([VERSION_BYTES, data]) : data, false);
    return sid;
  }
  /** Write on our direction of a control stream. */
  write(sid: number, data: Uint8Array, end = false): void {
    this.owed.delete(sid);
    const rec = this.records.get(sid);
    if (rec) {
      if (!rec.outStarted) {
        rec.outStarted = true;
        if (this.p.ctx.needVersion) data = concat([VERSION_BYTES, data]);
      }
      if (end) rec.outDone = true;
    }
    this.writeRaw(sid, data, end);
    if (end && rec) this.maybeDrop(rec);
  }
  /** Reset our direction of a control stream (on one we opened: once the peer showed it read our ChannelControl). */
  reset(sid: number, code: number): void {
    this.owed.delete(sid);
    const rec = this.records.get(sid);
    if (rec && openedByUs(sid) && rec.framesSeen === 0 && !rec.inDone) {
      rec.pendingReset = code;
      return;
    }
    this.p.ctx.out.push({ type: "reset", streamId: sid, code });
    if (rec) {
      rec.outDone = true;
      rec.pendingReset = null;
      this.maybeDrop(rec);
    }
  }
  flushPendingReset(rec: StreamRec): void {
    if (rec.pendingReset !== null) {
      const code = rec.pendingReset;
      rec.pendingReset = null;
      this.p.ctx.out.push({ type: "reset", streamId: rec.id, code });
      rec.outDone = true;
      this.maybeDrop(rec);
    }
  }
  maybeDrop(rec: StreamRec): void {
    if (rec.inDone && rec.outDone && rec.role !== "connection" && rec.stalled === null) this.records.delete(rec.id);
  }
  unbind(sid: number): void {
    const rec = this.records.get(sid);
    if (rec) rec.half = null;
    this.owed.delete(sid);
  }
  resetCtrl(h: SenderRec | ReceiverRec, code: number): void {
    if (h.ctrl !== null && h.ctrlOpen) {
      h.ctrlOpen = false;
      this.reset(h.ctrl, code);
    }
  }
}
