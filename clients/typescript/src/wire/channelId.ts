/**
 * Channel IDs and the per-space minter (as aqueduct/wire/channel_id.py).
 *
 * A channel ID is a 64-bit int: bit 0 direction (0 to server, 1 to client), bit 1 minter (0 client,
 * 1 server), bit 2 oneshot, bits 3.. the index. Each side mints indexes in its spaces sequentially
 * from 0, except the client's to-server multishot space, which starts at 1 (index 0 is the entrypoint).
 * The engine holds IDs as numbers (exact below 2^53; a peer cannot reach further by minting in order).
 * @module
 */
import { ProtocolError } from "./errors.js";

export type Side = "client" | "server";
export const otherSide = (side: Side): Side => (side === "client" ? "server" : "client");

/** The entrypoint channel: to the server, minted by the client, multishot, index 0. */
export const ENTRYPOINT = 0;

/** The fields of a channel ID. */
export interface ChannelIdFields {
  to: Side;
  mintedBy: Side;
  oneshot: boolean;
  index: bigint;
}

export const MAX_INDEX = (1n << 61n) - 1n;

/** Build an ID from its fields. */
export function makeChannelId(f: ChannelIdFields): bigint {
  if (f.index < 0n || f.index > MAX_INDEX) throw new RangeError(`channel index out of range: ${f.index}`);
  return (f.index << 3n) | (f.oneshot ? 4n : 0n) | (f.mintedBy === "server" ? 2n : 0n) | (f.to === "client" ? 1n : 0n);
}

/** Read the fields of a channel ID. */
export function channelIdFields(id: bigint | number): ChannelIdFields {
  const v = BigInt(id);
  return {
    to: v & 1n ? "client" : "server",
    mintedBy: v & 2n ? "server" : "client",
    oneshot: (v & 4n) !== 0n,
    index: v >> 3n,
  };
}

/** The side holding the receiver of channel `id`. */
export const receiverSide = (id: number): Side => (id % 2 === 1 ? "client" : "server");
/** The side that minted channel `id`. */
export const minterOf = (id: number): Side => (Math.floor(id / 2) % 2 === 1 ? "server" : "client");
/** Whether channel `id` is oneshot. */
export const isOneshot = (id: number): boolean => Math.floor(id / 4) % 2 === 1;

/** Hands out fresh channel IDs for one side of a connection. */
export class ChannelIdMinter {
  private readonly next: number[] = [0, 0, 0, 0, 0, 0, 0, 0];
  constructor(readonly side: Side) {
    if (side === "client") this.next[0] = 1;
  }

  /** The minter's state, to `restore` if what was minted is not used. */
  save(): number[] {
    return [...this.next];
  }
  restore(state: readonly number[]): void {
    this.next.splice(0, 8, ...state);
  }

  /** Mint the next ID for a channel whose receiver will be on side `to`. */
  mint(to: Side, oneshot = false): number {
    const space = (oneshot ? 4 : 0) | (this.side === "server" ? 2 : 0) | (to === "client" ? 1 : 0);
    const index = this.next[space]!;
    if (index * 8 + 7 > Number.MAX_SAFE_INTEGER) throw new ProtocolError("channel index space exhausted");
    this.next[space] = index + 1;
    return index * 8 + space;
  }
}
