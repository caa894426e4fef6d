/**
 * The sans-I/O client engine: events in, commands out (engine.ts, the facade over its parts: context.ts,
 * handles.ts, streams.ts, incoming.ts, intake.ts, sending.ts, receiving.ts, loss.ts), its types (types.ts), the
 * ack ledgers (acks.ts), the creation links (links.ts) and the per-channel records (halves.ts).
 * @module
 */
export { Engine } from "./engine.js";
export * from "./types.js";
