/**
 * Protocol errors and the connection close codes they map to (as aqueduct/wire/errors.py).
 *
 * Every malformed input raises {@link ProtocolError} and nothing else; the connection closes with
 * `error.code` and the message as its reason. Codes are Aqueduct application close codes
 * (specs/decisions/wire.md, WIRE-14 and WIRE-15).
 * @module
 */

/** Application close codes of an Aqueduct connection. */
export const CloseCode = {
  NO_ERROR: 0,
  PROTOCOL_VIOLATION: 1,
  FRAME_ENCODING: 2,
  VERSION_MISMATCH: 3,
  LIMIT_EXCEEDED: 4,
  DATAGRAMS_UNSUPPORTED: 5,
  CODEC_MISMATCH: 6,
  INTERNAL_ERROR: 7,
  SHUTTING_DOWN: 8,
  AUTHENTICATION_FAILED: 9,
  SCHEMA_MISMATCH: 10,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];

/** Stream reset codes: 1 "cancelled" (a sender cancelled, or a half was dropped), 2 "lost" (lost in transit). */
export const ResetCode = { CANCELLED: 1, LOST: 2 } as const;
export type ResetCode = (typeof ResetCode)[keyof typeof ResetCode];

/** Base of every error this package raises to applications (as Python's `aqueduct.AqueductError`). */
export class AqueductError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The peer broke the Aqueduct spec; the connection must close with `code`. */
export class ProtocolError extends AqueductError {
  readonly code: CloseCode;
  constructor(message: string, code: CloseCode = CloseCode.PROTOCOL_VIOLATION) {
    super(message);
    this.code = code;
  }
}

/** A ProtocolError for bytes that do not decode as frames. */
export function encodingError(message: string): ProtocolError {
  return new ProtocolError(message, CloseCode.FRAME_ENCODING);
}

/** Internal: the buffer ends before the item does; `needed` is a lower bound on its total size. */
export class Incomplete extends Error {
  constructor(readonly needed: number) {
    super(`incomplete: ${needed}`);
  }
}
