/**
 * Whole-buffer and incremental frame decoding (as aqueduct/wire/reader.py).
 *
 * `decodeFrames` takes a complete datagram or finished stream. `FrameReader` takes stream bytes in
 * arbitrary chunks: `feed(chunk)` returns every frame completed so far and keeps the partial rest;
 * when a partial frame tells how long it will be, the reader does not parse it again until that many
 * bytes are there. A declared length beyond `maxFrameSize` is refused before buffering.
 * @module
 */
import { Incomplete, encodingError } from "./errors.js";
import { type Frame, readFrame } from "./frames.js";
import { DEFAULT_HEADER_LIMITS, type HeaderLimits } from "./headers.js";
import { concat } from "./varint.js";

export const DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024;

/** Read frames from `buf` into `out` (with each one's size); return [position reached, bytes needed or 0]. */
function readFrames(buf: Uint8Array, limit: number, out: Frame[], sizes: number[], headers: HeaderLimits): [number, number] {
  let pos = 0;
  try {
    while (pos < buf.length) {
      const [frame, end] = readFrame(buf, pos, limit, headers);
      out.push(frame);
      sizes.push(end - pos);
      pos = end;
    }
  } catch (err) {
    if (err instanceof Incomplete) return [pos, err.needed - pos];
    throw err;
  }
  return [pos, 0];
}

/** Decode a complete buffer of one or more frames. */
export function decodeFrames(data: Uint8Array, maxFrameSize = DEFAULT_MAX_FRAME_SIZE,
  headers: HeaderLimits = DEFAULT_HEADER_LIMITS): Frame[] {
  if (data.length === 0) throw encodingError("no frame in an empty buffer");
  const frames: Frame[] = [];
  const [pos, needed] = readFrames(data, maxFrameSize, frames, [], headers);
  if (needed) throw encodingError(`frame at offset ${pos} is truncated`);
  return frames;
}

/** Incremental decoder for one stream's bytes. */
export class FrameReader {
  private parts: Uint8Array[] = [];
  /** Bytes held for a frame not yet complete. */
  buffered = 0;
  private needed = 0;
  framesRead = 0;

  constructor(readonly maxFrameSize = DEFAULT_MAX_FRAME_SIZE, readonly headers: HeaderLimits = DEFAULT_HEADER_LIMITS) {}

  /** Add stream bytes; return the frames they complete. */
  feed(chunk: Uint8Array): Frame[] {
    return this.feedSized(chunk)[0];
  }

  /** Add stream bytes; return the frames they complete and the bytes each took. */
  feedSized(chunk: Uint8Array): [Frame[], number[]] {
    if (chunk.length === 0) return [[], []];
    this.buffered += chunk.length;
    this.parts.push(chunk);
    if (this.buffered < this.needed) return [[], []];
    const buf = this.parts.length === 1 ? chunk : concat(this.parts);
    const frames: Frame[] = [];
    const sizes: number[] = [];
    const [pos, needed] = readFrames(buf, this.maxFrameSize, frames, sizes, this.headers);
    this.needed = needed;
    if (needed) {
      const rest = buf.slice(pos);
      this.parts = [rest];
      this.buffered = rest.length;
    } else {
      this.parts = [];
      this.buffered = 0;
    }
    this.framesRead += frames.length;
    return [frames, sizes];
  }

  /** The stream ended: throw a ProtocolError if a frame was cut off or none came at all. */
  finish(): void {
    if (this.buffered) throw encodingError(`stream finished inside a frame (${this.buffered} bytes left over)`);
    if (this.framesRead === 0) throw encodingError("stream finished without a complete frame");
  }
}
