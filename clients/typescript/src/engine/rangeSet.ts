/**
 * A set of non-negative integers kept as sorted disjoint half-open ranges `[a, b)` (as aqueduct/core/rangeset.py):
 * memory follows the holes, not the history.
 * @module
 */
export class RangeSet {
  /** Sorted, disjoint, non-adjacent ranges. */
  private r: Array<[number, number]> = [];

  get size(): number {
    return this.r.length;
  }
  [Symbol.iterator](): IterableIterator<[number, number]> {
    return this.r[Symbol.iterator]();
  }
  clear(): void {
    this.r = [];
  }
  has(n: number): boolean {
    for (const [a, b] of this.r) {
      if (n < a) return false;
      if (n < b) return true;
    }
    return false;
  }
  /** Add `[a, b)`. */
  add(a: number, b: number): void {
    if (b <= a) return;
    const out: Array<[number, number]> = [];
    let placed = false;
    for (const [x, y] of this.r) {
      if (y < a) out.push([x, y]);
      else if (b < x) {
        if (!placed) {
          out.push([a, b]);
          placed = true;
        }
        out.push([x, y]);
      } else {
        a = Math.min(a, x);
        b = Math.max(b, y);
      }
    }
    if (!placed) out.push([a, b]);
    this.r = out;
  }
  overlaps(a: number, b: number): boolean {
    return this.r.some(([x, y]) => x < b && a < y);
  }
  /** The end of the run starting at `start` (start itself if `start` is not in the set). */
  prefixEnd(start: number): number {
    for (const [a, b] of this.r) if (a <= start && start < b) return b;
    return start;
  }
  discardBelow(n: number): void {
    this.r = this.r.filter(([, b]) => b > n).map(([a, b]) => [Math.max(a, n), b]);
  }
  maxStop(): number {
    return this.r.length ? this.r[this.r.length - 1]![1] : 0;
  }
  nextStartAtOrAfter(n: number): number | undefined {
    for (const [a, b] of this.r) {
      if (b > n) return Math.max(a, n);
    }
    return undefined;
  }
  /** Runs from `start` to `stop`: `[first, stop, inSet]`, contiguous. */
  runs(start: number, stop: number): Array<[number, number, boolean]> {
    const out: Array<[number, number, boolean]> = [];
    let at = start;
    for (const [a, b] of this.r) {
      if (b <= at) continue;
      if (a >= stop) break;
      if (a > at) out.push([at, a, false]);
      const end = Math.min(b, stop);
      out.push([Math.max(a, at), end, true]);
      at = end;
    }
    if (at < stop) out.push([at, stop, false]);
    return out;
  }
}
