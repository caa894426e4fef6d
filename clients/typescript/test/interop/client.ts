// The TypeScript client as a process for tests/typescript/test_interop.py: its engine's transport is this process's
// stdio (one JSON object a line: commands out, transport events in), the Python engine plays the server on the
// other end, and the script below uses the API as a page would. It prints {"result": ...} and exits.
import { createInterface } from "node:readline";

import { Connection, channel, request, type Receiver, type Transport } from "../../src/index.js";
import { Engine, type TransportCommand, type TransportEvent } from "../../src/engine/index.js";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const unhex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "hex"));

class Stdio implements Transport {
  execute(c: TransportCommand): void {
    const out = "data" in c ? { ...c, data: hex(c.data) } : c;
    process.stdout.write(`${JSON.stringify(out)}\n`);
  }
  now(): number {
    return performance.now() / 1000;
  }
}

const conn = new Connection(new Engine([["codec", new TextEncoder().encode("cbor-a1d0c7")]]), new Stdio());
createInterface({ input: process.stdin }).on("line", (line) => {
  const ev = JSON.parse(line) as TransportEvent & { data?: string };
  conn.deliver((ev.data !== undefined ? { ...ev, data: unhex(ev.data) } : ev) as TransportEvent);
});
conn.pump();

async function collect<T>(rx: Receiver<T>): Promise<T[]> {
  const got: T[] = [];
  for await (const v of rx) got.push(v);
  return got;
}

async function exchange(): Promise<Record<string, unknown>> {
  const entry = conn.entrypoint as unknown as import("../../src/index.js").Sender<Record<string, unknown>>;
  // a sender handed to the server: it streams back on it and finishes
  const [tx, rx] = channel<number>();
  await entry.send({ op: "count", upto: 3, sink: tx });
  const counted = await collect(rx);
  // request: a oneshot reply
  const sum = await request<Record<string, unknown>, number>(entry, (reply) => ({ op: "add", a: 2, b: 3, reply }));
  // a channel the server makes, inside its reply
  const handed = await request<Record<string, unknown>, { feed: Receiver<string> }>(entry, (reply) => ({ op: "hand", reply }));
  const fed = await collect(handed.feed);
  // a receiver handed to the server, fed from here, unreliable: the server says how many arrived
  const [dtx, drx] = channel<number>({ delivery: "unreliable" });
  const counter = request<Record<string, unknown>, number>(entry, (reply) => ({ op: "tally", source: drx, reply }));
  for (let i = 0; i < 5; i++) await dtx.send(i);
  dtx.finish();
  const tallied = await counter;
  return { counted, sum, fed, tallied };
}

async function main(): Promise<unknown> {
  await conn.ready;
  const result = await exchange();
  // every half of the exchange is out of reach now: once collected, the engine holds none of them
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 10 && gc; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { ...result, sizes: conn.engine.stateSizes() };
}

main().then((result) => {
  process.stdout.write(`${JSON.stringify({ result })}\n`);
  // a graceful close: the entrypoint finishes (the server answers) before the close command goes out
  void conn.close(0, "done").then(() => setTimeout(() => process.exit(0), 50));
}, (err: unknown) => {
  process.stdout.write(`${JSON.stringify({ error: String((err as Error)?.stack ?? err) })}\n`);
  process.exit(1);
});
