/**
 * Fan-out: {@link Broadcast} sends each value to every subscriber; {@link Watch} keeps only the latest value
 * for each (as Python's api/fanout.py, kept small). A subscriber is an ordinary {@link Receiver}, so it can
 * travel in a message like any other half.
 * @module
 */
import { channel, type Receiver, type Sender } from "./halves.js";

/** Every value to every subscriber that is still reading (a subscriber whose channel ended is dropped). */
export class Broadcast<T> {
  private subscribers = new Set<Sender<T>>();

  /** A new subscriber: receives every value sent from now on. */
  subscribe(): Receiver<T> {
    const [tx, rx] = channel<T>();
    this.subscribers.add(tx);
    return rx;
  }

  /** Send `value` to every subscriber. */
  async send(value: T): Promise<void> {
    for (const tx of [...this.subscribers]) {
      try {
        tx.sendNow(value);
      } catch {
        this.subscribers.delete(tx);
      }
    }
  }

  /** How many subscribers are left. */
  get size(): number {
    return this.subscribers.size;
  }

  /** Finish every subscriber's channel. */
  close(): void {
    for (const tx of this.subscribers) {
      try {
        tx.finish();
      } catch {
        // (already ended)
      }
    }
    this.subscribers.clear();
  }
}

/** The latest value, for whoever asks: `get()` now, or `changed()` for the next one. */
export class Watch<T> {
  private version = 0;
  private waiters: Array<() => void> = [];
  constructor(private value: T) {}

  /** The current value. */
  get(): T {
    return this.value;
  }

  /** Replace the value and wake everyone waiting for a change. */
  async send(value: T): Promise<void> {
    this.value = value;
    this.version += 1;
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Resolves with the value after the next change. */
  async changed(): Promise<T> {
    const seen = this.version;
    while (this.version === seen) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.value;
  }

  /** A receiver of the latest values (skipping those replaced before it read them), e.g. to hand to the peer. */
  subscribe(): Receiver<T> {
    const [tx, rx] = channel<T>();
    void (async () => {
      try {
        tx.sendNow(this.value);
        for (;;) {
          const v = await this.changed();
          if (tx.status() !== null) return;
          tx.sendNow(v);
        }
      } catch {
        // the subscriber's channel ended
      }
    })();
    return rx;
  }
}
