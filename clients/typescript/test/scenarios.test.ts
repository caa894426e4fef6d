// The shared engine scenarios of specs/scenarios/ against the TypeScript engine (tests/core/test_scenarios.py runs
// the same files against the Python engine): one client engine fed the server's frames, checked for what it
// writes, resets and reports. specs/scenarios/README.md describes the format.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { test } from "node:test";

import { Engine, type AppEvent, type AttachKind, type Delivery, type EngineConfig, type TransportCommand } from "../src/engine/index.js";
import { decodeFrames, encodeFrames, PROTOCOL_VERSION } from "../src/wire/index.js";
import { frameFromJson, frameToJson, fromHex, normalize, toHex } from "./frameJson.js";

const dir = new URL("../../../../specs/scenarios/", import.meta.url);
const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();

type Step = Record<string, any>;

const camel = (s: string): string => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

class Run {
  readonly engine: Engine;
  now = 0;
  readonly handles = new Map<string, number>();
  readonly names = new Map<number, string>();
  commands: TransportCommand[] = [];
  events: AppEvent[] = [];

  constructor(config: Record<string, number>) {
    const cfg: Partial<EngineConfig> = Object.fromEntries(Object.entries(config).map(([k, v]) => [camel(k), v]));
    this.engine = new Engine([], cfg);
    this.engine.handleEvent({ type: "stream_data", streamId: 0, end: false, data: encodeFrames([
      { type: "Version", version: PROTOCOL_VERSION }, { type: "ConnectionControl", headers: [] }]) }, 0);
    this.engine.commands();
    this.engine.events();
    this.name("entry", this.engine.entrypoint);
  }
  name(name: string, handle: number): void {
    this.handles.set(name, handle);
    this.names.set(handle, name);
  }
  h(name: string): number {
    const handle = this.handles.get(name);
    assert.notEqual(handle, undefined, `no half named ${name}`);
    return handle!;
  }
  drain(): void {
    this.commands.push(...this.engine.commands());
    this.events.push(...this.engine.events());
  }
  step(step: Step): void {
    const e = this.engine;
    if ("send" in step) {
      const attach: Array<{ kind: AttachKind; name: string }> = step.attach ?? [];
      const result = e.send(this.h(step.send), fromHex(step.payload ?? ""), (step.delivery ?? "ordered") as Delivery,
        attach.map((a) => a.kind));
      attach.forEach((a, i) => this.name(a.name, result.created[i]!));
    } else if ("finish" in step) e.finish(this.h(step.finish));
    else if ("cancel" in step) e.cancel(this.h(step.cancel));
    else if ("close_receiver" in step) e.closeReceiver(this.h(step.close_receiver));
    else if ("drop_sender" in step) e.dropSender(this.h(step.drop_sender));
    else if ("drop_receiver" in step) e.dropReceiver(this.h(step.drop_receiver));
    else if ("take" in step) {
      const d = e.take(this.h(step.take));
      if (step.payload === null) assert.equal(d, null);
      else {
        assert.ok(d, "no message queued");
        assert.equal(toHex(d.payload), step.payload);
        const want: Array<{ name: string; is_sender: boolean }> = step.attachments ?? [];
        assert.deepEqual(d.attachments.map((a) => a.isSender), want.map((w) => w.is_sender));
        want.forEach((w, i) => this.name(w.name, d.attachments[i]!.handle));
      }
    } else if ("peer" in step) {
      const data = step.hex !== undefined ? fromHex(step.hex)
        : step.frames.length ? encodeFrames(step.frames.map(frameFromJson)) : new Uint8Array(0);
      e.handleEvent({ type: "stream_data", streamId: step.peer, data, end: step.end ?? false }, this.now);
    } else if ("peer_reset" in step) e.handleEvent({ type: "stream_reset", streamId: step.peer_reset, code: step.code }, this.now);
    else if ("peer_datagram" in step) {
      e.handleEvent({ type: "datagram", data: encodeFrames(step.peer_datagram.map(frameFromJson)) }, this.now);
    } else if ("time" in step) {
      this.now = step.time;
      e.handleTimer(this.now);
    } else if ("expect" in step) {
      this.drain();
      this.check(step.expect);
      this.commands = [];
      this.events = [];
      return;
    } else throw new Error(`unknown step ${JSON.stringify(step)}`);
    this.drain();
  }
  eventJson(ev: AppEvent): Record<string, unknown> | null {
    const n = (h: number): string => this.names.get(h) ?? `#${h}`;
    switch (ev.type) {
      case "acked": return { acked: n(ev.sender), reliable: ev.reliable, first: ev.first, stop: ev.stop };
      case "nacked": return { nacked: n(ev.sender), reliable: ev.reliable, first: ev.first, stop: ev.stop };
      case "sender_ended": return { sender_ended: n(ev.sender), reason: ev.reason };
      case "receiver_ended": return { receiver_ended: n(ev.receiver), reason: ev.reason };
      case "message_available": return { message_available: n(ev.receiver) };
      default: return null;
    }
  }
  check(want: Record<string, any>): void {
    const cmds = this.commands;
    if ("written" in want) {
      const streams = new Map<number, Uint8Array[]>();
      for (const c of cmds) if (c.type === "send") streams.set(c.streamId, [...(streams.get(c.streamId) ?? []), c.data]);
      const got: Record<string, unknown> = {};
      for (const [sid, parts] of streams) {
        const data = Uint8Array.from(parts.flatMap((p) => [...p]));
        if (data.length) got[String(sid)] = decodeFrames(data).map(frameToJson);
      }
      assert.deepEqual(normalize(got), normalize(want.written), "written");
    }
    if ("ends" in want) {
      assert.deepEqual(cmds.filter((c) => c.type === "send" && c.end).map((c) => (c as { streamId: number }).streamId).sort(),
        [...want.ends].sort(), "ends");
    }
    if ("resets" in want) {
      const got = Object.fromEntries(cmds.filter((c) => c.type === "reset").map((c) => [String((c as any).streamId), (c as any).code]));
      assert.deepEqual(got, want.resets, "resets");
    }
    if ("datagrams" in want) {
      const got = cmds.filter((c) => c.type === "datagram").map((c) => decodeFrames((c as any).data).map(frameToJson));
      assert.deepEqual(normalize(got), normalize(want.datagrams), "datagrams");
    }
    if ("close" in want) {
      const closes = cmds.filter((c) => c.type === "close").map((c) => (c as any).code);
      assert.equal(closes.length ? closes[0] : null, want.close, "close");
    }
    if ("events" in want) {
      const got = this.events.map((ev) => this.eventJson(ev)).filter((j) => j !== null);
      assert.deepEqual(got, want.events, "events");
    }
  }
}

test("there are scenarios", () => assert.ok(files.length >= 8));

for (const file of files) {
  test(`scenario ${file}`, () => {
    const doc = JSON.parse(readFileSync(new URL(file, dir), "utf8"));
    const run = new Run(doc.config ?? {});
    doc.steps.forEach((step: Step, i: number) => {
      try {
        run.step(step);
      } catch (err) {
        throw new Error(`${file} step ${i}: ${JSON.stringify(step)}\n${(err as Error).message}`);
      }
    });
  });
}
