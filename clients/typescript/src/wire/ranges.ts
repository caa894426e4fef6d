/**
 * Positive negative range data: alternating run lengths from a context start (as aqueduct/wire/ranges.py).
 *
 * No run may be 0, except the first when more follow (a leading 0 says "the first run is negative").
 * @module
 */
import { encodingError } from "./errors.js";
import { encodeIntArray, readIntArray } from "./varint.js";

/** Throw a ProtocolError unless `ranges` obeys the zero rule. */
export function validateRanges(ranges: readonly bigint[]): void {
  if (ranges.length === 1 && ranges[0] === 0n) throw encodingError("range data holds a lone 0");
  const zero = ranges.indexOf(0n, 1);
  if (zero !== -1) throw encodingError(`range data holds a 0 at position ${zero}`);
}

/** Encode range data. */
export function encodeRanges(ranges: readonly bigint[]): Uint8Array {
  validateRanges(ranges);
  return encodeIntArray(ranges);
}

/** Read range data at `pos`. */
export function readRanges(buf: Uint8Array, pos: number, limit: number): [bigint[], number] {
  const [out, end] = readIntArray(buf, pos, limit, "range data");
  try {
    validateRanges(out);
  } catch (err) {
    throw encodingError(`${(err as Error).message} (range data at offset ${pos})`);
  }
  return [out, end];
}

/** One run of numbers: `[first, stop)` and whether it is positive. */
export interface Run {
  first: number;
  stop: number;
  positive: boolean;
}

/** The runs of `ranges` counted from `start` (numbers: callers have checked they are safe integers). */
export function rangesToRuns(start: number, ranges: readonly number[]): Run[] {
  const out: Run[] = [];
  let positive = true;
  let at = start;
  for (const run of ranges) {
    if (run) out.push({ first: at, stop: at + run, positive });
    at += run;
    positive = !positive;
  }
  return out;
}

/** Contiguous runs beginning at `start` as range ints (same-sign runs merged; a first negative run gets the leading 0). */
export function runsToRanges(start: number, runs: readonly Run[]): number[] {
  const out: number[] = [];
  let positive = true;
  let at = start;
  for (const { first, stop, positive: pos } of runs) {
    if (first !== at) throw new RangeError("runs must be contiguous from start");
    if (stop <= first) continue;
    if (pos === positive) {
      out.push(stop - first);
      positive = !positive;
    } else if (out.length) {
      out[out.length - 1]! += stop - first;
    } else {
      out.push(0, stop - first);
      positive = true;
    }
    at = stop;
  }
  return out;
}
