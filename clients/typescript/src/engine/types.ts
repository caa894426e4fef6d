/**
 * What the sans-I/O engine takes and gives: transport events in, transport commands and application events out
 * (as aqueduct/core/transport.py and app.py), its configuration (core/config.py) and the end reasons
 * (aqueduct/errors.py's EndReason).
 *
 * Stream IDs follow QUIC numbering (client bidi 0, 4, 8...; server bidi 1, 5...; client uni 2, 6...; server uni
 * 3, 7...). The engine picks the IDs of the streams it opens (a stream opens with its first SendStreamData); an
 * adapter numbers the peer's streams the same way, so the WebTransport adapter is a 1:1 map.
 * @module
 */

/** How a message travels. */
export type Delivery = "ordered" | "unordered" | "unreliable";

/** What a message hands the peer: a new channel's sender or receiver (we keep the other half). */
export type AttachKind = "sender" | "receiver" | "oneshot_sender" | "oneshot_receiver";

/** Why a half ended (the values of Python's EndReason). */
export type EndReason = "finished" | "cancelled" | "lost" | "closed" | "receiver dropped" | "connection lost";

/** Stream data arrived (`end`: the peer finished its direction). */
export interface StreamData { type: "stream_data"; streamId: number; data: Uint8Array; end: boolean }
/** The peer reset its sending direction of a stream. */
export interface StreamReset { type: "stream_reset"; streamId: number; code: number }
/** A datagram arrived. */
export interface DatagramIn { type: "datagram"; data: Uint8Array }
/** The transport connection ended. */
export interface TransportClosed { type: "closed"; code: number; reason: string }
export type TransportEvent = StreamData | StreamReset | DatagramIn | TransportClosed;

/** Write on a stream (opening it with its first write); `end` finishes our direction. */
export interface SendStreamData { type: "send"; streamId: number; data: Uint8Array; end: boolean }
/** Reset our direction of a stream. */
export interface ResetStream { type: "reset"; streamId: number; code: number }
/** Send a datagram. */
export interface SendDatagram { type: "datagram"; data: Uint8Array }
/** Close the connection. */
export interface CloseConnection { type: "close"; code: number; reason: string }
/** Stop reading a stream (its next frame waits for room in a receiver queue): WebTransport's flow control. */
export interface PauseStream { type: "pause"; streamId: number }
/** Read a paused stream again. */
export interface ResumeStream { type: "resume"; streamId: number }
export type TransportCommand = SendStreamData | ResetStream | SendDatagram | CloseConnection | PauseStream | ResumeStream;

/** A half handed to us inside a message. */
export interface Attachment { index: number; channel: number; isSender: boolean; handle: number }

/** A message taken from a receiver. */
export interface Delivered {
  payload: Uint8Array;
  attachments: Attachment[];
  channel: number;
  number: number;
  delivery: Delivery;
}

/** What `send` did: the message number, the local half per attachment, and the stream written (null: datagram). */
export interface SendResult { number: number; created: number[]; streamId: number | null }

export type AppEvent =
  | { type: "headers"; headers: ReadonlyArray<readonly [string, Uint8Array]> }
  | { type: "message_available"; receiver: number }
  | { type: "receiver_ended"; receiver: number; reason: EndReason }
  | { type: "sender_ended"; sender: number; reason: EndReason }
  | { type: "acked"; sender: number; reliable: boolean; first: number; stop: number }
  | { type: "nacked"; sender: number; reliable: boolean; first: number; stop: number }
  | { type: "connection_closed"; code: number; reason: string; byPeer: boolean };

/** Limits and timings of one engine (the subset of Python's EngineConfig a client needs), seconds for times. */
export interface EngineConfig {
  maxFrameSize: number;
  maxChannels: number;
  maxPendingReceivers: number;
  maxReceiverQueueMessages: number;
  maxReceiverQueueBytes: number;
  maxBufferedBytes: number;
  maxDatagramPayload: number;
  sentUnreliableDelay: number;
  ackDelay: number;
  nackTimeout: number;
  initialRtt: number;
  heldItemOverhead: number;
  /** Peer-minted channels remembered as handed out, against ghost receivers (Python's discarded_filter_size). */
  maxHandedOut: number;
  /** Ranges of message numbers one ledger may hold (gaps the peer leaves): past it reliable gaps close the
   * connection (LIMIT_EXCEEDED) and unreliable ones are nacked oldest first. */
  maxAckRanges: number;
  /** Channels of recently ended receivers remembered, so a late message makes no ghost (0 disables the filter). */
  discardedFilterSize: number;
}

export const DEFAULT_CONFIG: EngineConfig = {
  maxFrameSize: 16 * 1024 * 1024,
  maxChannels: 100_000,
  maxPendingReceivers: 10_000,
  maxReceiverQueueMessages: 10_000,
  maxReceiverQueueBytes: 16 * 1024 * 1024,
  maxBufferedBytes: 64 * 1024 * 1024,
  maxDatagramPayload: 1100,
  sentUnreliableDelay: 0.1,
  ackDelay: 0.05,
  nackTimeout: 1.0,
  initialRtt: 0.1,
  heldItemOverhead: 64,
  maxHandedOut: 4096,
  maxAckRanges: 4096,
  discardedFilterSize: 4096,
};
