/**
 * `request`: send a message carrying a fresh oneshot reply sender and wait for the reply (as Python's
 * aqueduct.request). The reply receiver is closed however the call ends, so a caller that gives up (a timeout,
 * an abort) tells the server its reply is no longer wanted.
 * @module
 */
import { AqueductError, Timeout } from "../errors.js";
import { oneshot, type Sender } from "./halves.js";

/** Options of {@link request}. */
export interface RequestOptions {
  /** Give up after this many milliseconds (Timeout). */
  timeout?: number;
  /** Give up when this signal aborts (the error is the signal's reason, or an AqueductError). */
  signal?: AbortSignal;
}

/** Send `build(reply)` on `target` and resolve with what the server sends on `reply`. */
export async function request<Req, Rep>(target: Sender<Req>, build: (reply: Sender<Rep>) => Req,
  options: RequestOptions = {}): Promise<Rep> {
  const [reply, answer] = oneshot<Rep>();
  try {
    await target.send(build(reply));
    const got = answer.recv(options.timeout === undefined ? {} : { timeout: options.timeout });
    got.catch(() => undefined); // (an abort below may leave it unawaited; its error is the abort's then)
    if (!options.signal) return await got;
    const signal = options.signal;
    if (signal.aborted) throw signal.reason ?? new AqueductError("aborted");
    return await new Promise<Rep>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason ?? new AqueductError("aborted"));
      signal.addEventListener("abort", onAbort, { once: true });
      const done = (): void => signal.removeEventListener("abort", onAbort);
      got.then((v) => {
        done();
        resolve(v);
      }, (err: unknown) => {
        done();
        reject(err);
      });
    });
  } catch (err) {
    if (err instanceof Timeout) throw new Timeout(`no reply within ${options.timeout} ms`);
    throw err;
  } finally {
    answer.close();
  }
}
