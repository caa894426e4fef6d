// A connection whose transport keeps the engine's commands for the test, which plays the server's side of the wire.
import { CborCodec, Connection, type Transport } from "../src/index.js";
import { Engine, type TransportCommand } from "../src/engine/index.js";
import { decodeFrames, encodeFrames, PROTOCOL_VERSION, type Frame } from "../src/wire/index.js";

const codec = new CborCodec();

/** A connection whose transport keeps the engine's commands for the test, which plays the server. */
export class Scripted implements Transport {
  readonly commands: TransportCommand[] = [];
  clock = 0;
  readonly conn: Connection;
  constructor() {
    this.conn = new Connection(new Engine([["codec", new TextEncoder().encode("cbor-a1d0c7")]]), this, codec);
    this.conn.pump();
    this.peer(0, [{ type: "Version", version: PROTOCOL_VERSION }, { type: "ConnectionControl", headers: [] }]);
  }
  execute(command: TransportCommand): void {
    this.commands.push(command);
  }
  now(): number {
    return this.clock;
  }
  peer(streamId: number, frames: Frame[], end = false): void {
    this.conn.deliver({ type: "stream_data", streamId, data: encodeFrames(frames), end });
  }
  /** The frames written on a stream since the last call, and whether it was finished. */
  written(streamId: number): Frame[] {
    const data = this.commands.filter((c) => c.type === "send" && c.streamId === streamId).map((c) => (c as { data: Uint8Array }).data);
    this.commands.splice(0, this.commands.length, ...this.commands.filter((c) => !(c.type === "send" && c.streamId === streamId)));
    const all = Uint8Array.from(data.flatMap((d) => [...d]));
    return all.length ? decodeFrames(all) : [];
  }
}

