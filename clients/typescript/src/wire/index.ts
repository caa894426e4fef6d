/**
 * The Aqueduct wire format: bytes to frames and back, pure functions, no I/O (as aqueduct/wire/).
 *
 * Layout: varint.ts (var len ints and byte arrays), headers.ts (header data), ranges.ts (pos-neg range
 * data), channelId.ts (IDs and minting), frames.ts (the frame types and the per-frame codec), reader.ts
 * (whole-buffer and incremental decoding). Every malformed input throws {@link ProtocolError}.
 * @module
 */
export * from "./errors.js";
export * from "./varint.js";
export * from "./headers.js";
export * from "./ranges.js";
export * from "./channelId.js";
export * from "./frames.js";
export * from "./reader.js";
