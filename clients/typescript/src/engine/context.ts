/**
 * What every part of the engine shares (as aqueduct/core/context.py): the config, the clock and RTT, whether the
 * connection is closed, the server's headers, the outputs (transport commands, application events), the timers,
 * the channel ID minter and the creation links; and `Parts`, the engine's parts by name.
 *
 * Theory of operation. The engine (engine.ts) is a facade over parts that each own one concern and are the only
 * writers of their fields: handles.ts (the halves by handle and channel, the ghost filters), streams.ts (stream
 * records and our writes), incoming.ts (stream roles, frame routing, stalled streams), intake.ts (a Message
 * received), sending.ts (the senders' life), receiving.ts (the receivers' life), loss.ts (cascading loss). A part
 * reaches another through `Parts`, one object built by the engine, so a call between parts is a plain method call
 * in the order the spec's procedures say. Everything a part emits goes to this context's `out` (transport commands,
 * in order) and `appEvents`; a timer is a key ("su:<handle>", "rx:<handle>") and its deadline.
 * @module
 */
import { ChannelIdMinter, type Side } from "../wire/channelId.js";
import { CloseCode, ProtocolError } from "../wire/errors.js";
import { PROTOCOL_VERSION, encodeFrame } from "../wire/frames.js";
import type { Headers } from "../wire/headers.js";
import { CreationLinks } from "./links.js";
import { type AppEvent, DEFAULT_CONFIG, type EngineConfig, type TransportCommand } from "./types.js";
import type { Handles } from "./handles.js";
import type { Incoming } from "./incoming.js";
import type { Intake } from "./intake.js";
import type { Loss } from "./loss.js";
import type { Receivers } from "./receiving.js";
import type { Senders } from "./sending.js";
import type { StreamTable } from "./streams.js";

/** The engine's parts, by name: each part reaches the others through this. */
export interface Parts {
  ctx: Context;
  handles: Handles;
  streams: StreamTable;
  incoming: Incoming;
  intake: Intake;
  senders: Senders;
  receivers: Receivers;
  loss: Loss;
}

/** This engine's side: it is a client's. */
export const SIDE: Side = "client";
export const VERSION_BYTES = encodeFrame({ type: "Version", version: PROTOCOL_VERSION });
export const EMPTY_ACKNACK = encodeFrame({ type: "AckNackUnreliable", ranges: [] });
export const SENT_NONE = encodeFrame({ type: "SentUnreliable", count: 0n });
export const isUni = (sid: number): boolean => (sid & 2) !== 0;
export const openedByUs = (sid: number): boolean => (sid & 1) === 0;

/** A wire int as a JS number (LIMIT_EXCEEDED past 2^53 - 1). */
export function safe(v: bigint, what: string): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ProtocolError(`${what} ${v} is beyond 2^53 - 1, the largest this client tracks`, CloseCode.LIMIT_EXCEEDED);
  }
  return Number(v);
}
export const safeAll = (vs: bigint[], what: string): number[] => vs.map((v) => safe(v, what));
export const bigs = (ns: readonly number[]): bigint[] => ns.map((n) => BigInt(n));

/** The shared state of one engine. */
export class Context {
  readonly config: EngineConfig;
  /** The clock of the last input (seconds). */
  now = 0;
  rtt: number;
  closed = false;
  peerHeaders: Headers | null = null;
  /** Until the server's headers came, every stream and datagram we open starts with a Version frame. */
  needVersion = true;
  out: TransportCommand[] = [];
  appEvents: AppEvent[] = [];
  readonly timers = new Map<string, number>();
  readonly minter = new ChannelIdMinter(SIDE);
  readonly links = new CreationLinks();

  constructor(config: Partial<EngineConfig>) {
    this.config = { ...DEFAULT_CONFIG, ...config };
    this.rtt = this.config.initialRtt;
  }
}
