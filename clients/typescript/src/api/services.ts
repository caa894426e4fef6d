/**
 * Typed service stubs: call an `aqueduct.Service` served by Python (`serve(..., service=Impl())`) from TypeScript
 * (as Python's services/stub.py, for the client side).
 *
 * How a call travels (specs/decisions/services.md, SVC-2): one CBOR message on the service's channel (the
 * connection's entrypoint) holding `method` (the method's name), one field per parameter, `reply` (a fresh oneshot
 * sender) and an optional `meta` (`timeout`: seconds left, `metadata`); the answer is one message on that oneshot:
 * `{ value }` or `{ error: { type, message, method } }`. A streaming result is a Receiver inside `value`. A caller
 * that stops waiting (a timeout, an AbortSignal) closes its reply receiver, which cancels the server's task.
 *
 * The types come from the service's JSON Schema: `aqueduct schema module:Interface | npm run -s service-types`
 * writes the call type `C` (a union of one interface per method); `service<C>(conn.entrypoint)` is then a
 * {@link Stub} whose methods take the parameters as an object and resolve with the result.
 * @module
 */
import { RemoteError } from "../errors.js";
import type { Receiver, Sender } from "./halves.js";
import { request } from "./request.js";

/** A oneshot channel's sender, as the schema names it (the same class as Sender, made by `oneshot()`). */
export type OneshotSender<T> = Sender<T>;
/** A oneshot channel's receiver, as the schema names it. */
export type OneshotReceiver<T> = Receiver<T>;

/** What every call message has besides its parameters. */
export interface CallMessage {
  method: string;
  reply: Sender<never> | Sender<any>;
  meta?: CallMeta | null;
}

/** What travels with a call besides its arguments. */
export interface CallMeta {
  /** Seconds the server may take (the server runs the method under it). */
  timeout?: number | null;
  metadata?: Record<string, string>;
  /** How deep the call is nested (the server sets it for calls its methods make; a page's calls are 0). */
  depth?: number;
}

/** An exception raised by a service method, as it travels back. */
export interface Failure {
  type: string;
  message: string;
  method: string;
}

type CallOf<C, M> = Extract<C, { method: M }>;
/** The parameters of one call message: every field but `method`, `reply` and `meta`. */
export type ParamsOf<C> = Omit<C, "method" | "reply" | "meta">;
type ReplyOf<C> = C extends { reply: Sender<infer R> } ? R : never;
/** The result of a call: its reply's `value` (void for a method returning None). */
export type ResultOf<C> = ReplyOf<C> extends { value?: infer V } ? ([NonNullable<V>] extends [never] ? void : NonNullable<V>) : never;

/** Options of one call. */
export interface CallOptions {
  /** Milliseconds to wait: the call fails with Timeout after them, and the server is told the time left. */
  timeout?: number;
  /** Abort the call (its reply receiver closes, so the server cancels its task). */
  signal?: AbortSignal;
  /** Metadata the server's interceptors and methods can read. */
  metadata?: Record<string, string>;
}

/** A stub: one async method per method of the service. */
export type Stub<C extends { method: string }> = {
  [M in C["method"]]: (params: ParamsOf<CallOf<C, M>>, options?: CallOptions) => Promise<ResultOf<CallOf<C, M>>>;
};

/** Declared error types: the `type` a server sends (the exception class's name) -> the error to throw. */
export type ErrorTypes = Record<string, new (message: string) => Error>;

/** Options of {@link service}. */
export interface ServiceOptions {
  /** Errors the interface declares, by the name the server sends; others arrive as RemoteError. */
  errors?: ErrorTypes;
}

/** A typed stub of the service behind `target` (a connection's entrypoint, or a capability Sender). */
export function service<C extends { method: string }>(target: Sender<C>, options: ServiceOptions = {}): Stub<C> {
  const errors = options.errors ?? {};
  const call = async (method: string, params: object, callOptions: CallOptions = {}): Promise<unknown> => {
    const meta: CallMeta = {};
    if (callOptions.timeout !== undefined) meta.timeout = callOptions.timeout / 1000;
    if (callOptions.metadata) meta.metadata = callOptions.metadata;
    const build = (reply: Sender<unknown>): C => {
      const message: Record<string, unknown> = { method, ...params, reply };
      if (Object.keys(meta).length) message.meta = meta;
      return message as unknown as C;
    };
    const requestOptions: { timeout?: number; signal?: AbortSignal } = {};
    if (callOptions.timeout !== undefined) requestOptions.timeout = callOptions.timeout;
    if (callOptions.signal) requestOptions.signal = callOptions.signal;
    const answer = await request<C, { value?: unknown; error?: Failure | null }>(target, build, requestOptions);
    if (answer.error) {
      const { type, message } = answer.error;
      const short = type.split(".").pop()!;
      const Declared = errors[type] ?? errors[short];
      if (Declared) throw new Declared(message);
      throw new RemoteError(type, message, answer.error.method ?? method);
    }
    return answer.value ?? undefined;
  };
  return new Proxy({} as Stub<C>, {
    get(_target, name) {
      if (typeof name !== "string" || name === "then") return undefined;
      return (params: object = {}, callOptions?: CallOptions) => call(name, params, callOptions);
    },
  });
}
