/**
 * The errors this package raises to applications (the names and meanings of Python's aqueduct/errors.py).
 * Every one derives from {@link AqueductError}.
 * @module
 */
import { AqueductError } from "./wire/errors.js";
import type { EndReason } from "./engine/types.js";

export { AqueductError, ProtocolError, CloseCode, ResetCode } from "./wire/errors.js";

/** A channel ended or was not usable: `reason` says why (undefined: it was never usable or was dropped). */
export class ChannelError extends AqueductError {
  constructor(message: string, readonly reason?: EndReason) {
    super(message);
  }
}
/** The handle is unknown, dropped, finished or cancelled. */
export class ChannelClosed extends ChannelError {}
/** The channel finished: no more messages (a `for await` loop ends on it). */
export class ChannelFinished extends ChannelError {}
/** The sender cancelled the channel. */
export class ChannelCancelled extends ChannelError {}
/** The channel was lost in transit (its creating message was lost, or the peer reset it "lost"). */
export class ChannelLost extends ChannelError {}
/** The receiving side closed or dropped its receiver. */
export class ReceiverDropped extends ChannelError {}
/** The connection is over. */
export class ConnectionLost extends ChannelError {
  constructor(message = "the connection is closed", readonly code?: number) {
    super(message, "connection lost");
  }
}
/** A locally configured limit was hit (a payload too large, a datagram over the transport's size). */
export class LimitExceeded extends AqueductError {}
/** The codec could not encode or decode a payload. */
export class CodecError extends AqueductError {}
/** A call or receive did not complete in time. */
export class Timeout extends AqueductError {}
/** A service method failed on the server with an error type the caller did not declare. */
export class RemoteError extends AqueductError {
  constructor(readonly type: string, message: string, readonly method: string) {
    super(`${type}: ${message}`);
  }
}

/** The error raised for a channel that ended for `reason` (Python's ERROR_FOR_REASON). */
export function errorForReason(reason: EndReason, what: string): ChannelError {
  switch (reason) {
    case "finished": return new ChannelFinished(`${what} finished`, reason);
    case "cancelled": return new ChannelCancelled(`${what} was cancelled`, reason);
    case "lost": return new ChannelLost(`${what} was lost in transit`, reason);
    case "receiver dropped": return new ReceiverDropped(`${what}: the receiver was dropped`, reason);
    case "connection lost": return new ConnectionLost(`${what}: the connection is closed`);
    case "closed": return new ChannelClosed(`${what} was closed`, reason);
  }
}
