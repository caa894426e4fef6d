/**
 * Aqueduct from TypeScript and the browser: typed channels to an Aqueduct server over WebTransport.
 *
 * ```ts
 * import { connect, channel } from "@aqueduct-quic/client";
 * const conn = await connect<Request>(url, { serverCertificateHashes });
 * const [tx, rx] = channel<Tick>();
 * await conn.entrypoint.send({ subscribe: tx });
 * for await (const tick of rx) console.log(tick);
 * ```
 *
 * Layers: `wire` (the codec), `engine` (the sans-I/O protocol engine), the API (halves, codec, connection,
 * request, fan-out, services) and the WebTransport adapter.
 * @module
 */
export { connect, WebTransportAdapter, type ConnectOptions } from "./webtransport.js";
export { Connection, type CloseInfo, type Transport } from "./api/connection.js";
export { channel, oneshot, Sender, Receiver, Half, type ChannelOptions, type SendOptions, type RecvOptions } from "./api/halves.js";
export { CborCodec, DEFAULT_CODEC, LagNotice, ATTACHMENT_TAG, type Codec } from "./api/codec.js";
export { request, type RequestOptions } from "./api/request.js";
export { Broadcast, Watch } from "./api/fanout.js";
export * from "./errors.js";
export type { Delivery, EndReason, EngineConfig } from "./engine/types.js";
export type { Headers } from "./wire/headers.js";
export {
  service, type Stub, type CallOptions, type ServiceOptions, type ErrorTypes, type ParamsOf, type ResultOf, type CallMeta,
  type Failure, type OneshotSender, type OneshotReceiver,
} from "./api/services.js";
