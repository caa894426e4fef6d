/**
 * The sans-I/O client engine: events in, commands out (engine.ts), its types (types.ts), the ack ledgers
 * (acks.ts), the creation links (links.ts) and the per-channel records (halves.ts).
 * @module
 */
export { Engine } from "./engine.js";
export * from "./types.js";
