"""Turning a run's samples into figures: medians with min and max, same-run ratios, targets, table, JSON, plot.

A cell's ratio compares its median with the median of its reference
transport on the same workload in the same run (raw aioquic on one stream;
raw aioquic datagrams for unreliable channels; raw aioquic with one new
stream per message for unordered channels). For times (round trips,
set-up) the ratio is ours / theirs, so lower is better there. The request/reply workloads of the peer
rows (`--peers`) compare with grpcio over TLS instead, what the performance issue's targets name.

The targets block lists every target of the performance issues, each met, NOT met, or n/a when this
run did not measure what it needs (say, without --peers or --connections).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from .lab import GRPC_TLS
from .runner import BY_KEY, BY_NAME, TRANSPORTS, WORKLOADS, Results
from .settings import TUNED_PACKET_SIZE

REFERENCE = {t.name: t.reference for t in TRANSPORTS}


@dataclass(frozen=True)
class Cell:
    """One (transport, workload) figure."""

    transport: str
    workload: str
    unit: str
    median: float
    low: float
    high: float
    rounds: int
    ratio: float | None
    reference: str


@dataclass(frozen=True)
class Target:
    """One goal of the performance issue and whether this run met it."""

    name: str
    value: float | None
    goal: str
    met: bool | None


def cells(results: Results) -> list[Cell]:
    """Every measured cell, workload by workload."""
    out = []
    for w in WORKLOADS:
        for transport, by_workload in results.samples.items():
            values = by_workload.get(w.key)
            if not values:
                continue
            ref_name = w.reference or REFERENCE.get(transport, "aioquic")
            ref_values = results.samples.get(ref_name, {}).get(w.key)
            if not ref_values and ref_name != "aioquic":
                ref_name = "aioquic"
                ref_values = results.samples.get(ref_name, {}).get(w.key)
            med = statistics.median(values)
            ratio = med / statistics.median(ref_values) if ref_values and statistics.median(ref_values) else None
            out.append(Cell(transport, w.key, w.unit, med, min(values), max(values), len(values), ratio, ref_name))
    return out


def _ratio(cs: list[Cell], transport: str, workload: str) -> float | None:
    return next((c.ratio for c in cs if c.transport == transport and c.workload == workload), None)


def _check(value: float | None, goal: float, at_least: bool) -> bool | None:
    if value is None:
        return None
    return value >= goal if at_least else value <= goal


def _median(cs: list[Cell], transport: str, workload: str) -> float | None:
    return next((c.median for c in cs if c.transport == transport and c.workload == workload), None)


def _share(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _kernel_vs_raw(results: Results, loss: float) -> float | None:
    """Aqueduct's goodput / raw aioquic's at `loss` under kernel loss (same namespace, same rule)."""
    at = {r["path"]: r["mb_s"] for r in results.kernel_loss if r["loss"] == loss}
    return _share(at.get("aqueduct ordered raw"), at.get("aioquic"))


def targets(results: Results) -> list[Target]:
    """Every target of the performance issues, evaluated on this run (n/a where it measured nothing for it)."""
    cs = cells(results)
    aq = "aqueduct ordered raw"
    o64, o16, u64 = _ratio(cs, aq, "msg64"), _ratio(cs, aq, "msg16k"), _ratio(cs, "aqueduct unreliable raw", "msg64")
    rtt, setup, zero = _ratio(cs, aq, "rtt_p50"), _ratio(cs, aq, "setup_1rtt"), _ratio(cs, aq, "setup_0rtt")
    un64 = _ratio(cs, "aqueduct unordered raw", "msg64")
    req = "aqueduct request"
    rr1, rr1_p50, rr32 = _ratio(cs, req, "rr1"), _ratio(cs, req, "rr1_p50"), _ratio(cs, req, "rr32")
    zero_vs_grpc = _share(_median(cs, "aqueduct raw", "setup_0rtt"), _median(cs, GRPC_TLS, "setup_1rtt"))
    channels = _median(cs, aq, "channels")
    out = [  # issue 28's (request/reply, channels, connect) and issue 21's (per message); issue 8's were lower
        Target("fresh-oneshot request/reply, 1 in flight, calls/s vs grpcio TLS", rr1, ">= 1.0x",
               _check(rr1, 1.0, True)),
        Target("fresh-oneshot request/reply, 1 in flight, p50 vs grpcio TLS", rr1_p50, "<= 1.0x",
               _check(rr1_p50, 1.0, False)),
        Target("fresh-oneshot request/reply, 32 in flight, calls/s vs grpcio TLS", rr32, ">= 3x",
               _check(rr32, 3.0, True)),
        Target("channel creation (channels/s)", channels, ">= 15,000", _check(channels, 15_000, True)),
        Target("connect to first echo (0-RTT) vs raw aioquic 0-RTT", zero, "<= 1.0x", _check(zero, 1.0, False)),
        Target("connect to first reply (0-RTT) vs grpcio TLS connect", zero_vs_grpc, "<= 2x",
               _check(zero_vs_grpc, 2.0, False)),
        Target("ordered 64 B msgs/s vs raw aioquic", o64, ">= 1.0x", _check(o64, 1.0, True)),
        Target("unreliable 64 B msgs/s vs raw datagrams", u64, ">= 1.0x", _check(u64, 1.0, True)),
        Target("ordered RTT p50 vs raw aioquic", rtt, "<= 1.1x", _check(rtt, 1.1, False)),
        Target("connect to first echo (1-RTT) vs raw aioquic", setup, "<= 1.1x", _check(setup, 1.1, False)),
        Target("unordered 64 B msgs/s vs raw aioquic stream per message", un64, ">= 0.8x",
               _check(un64, 0.8, True)),
        Target("ordered 16 KiB MB/s vs raw aioquic", o16, ">= 0.9x", _check(o16, 0.9, True)),
    ]
    typed = "aqueduct ordered cbor typed"
    for key, label in (("msg64", "64 B msgs/s"), ("channels", "channels/s")):
        share = _share(_median(cs, typed, key), _median(cs, "aqueduct ordered cbor", key))
        out.append(Target(f"typed {label} vs untyped cbor (same run)", share, ">= 0.9x", _check(share, 0.9, True)))
    best = "aqueduct ordered raw tuned"
    b64, bbulk, brtt = _ratio(cs, best, "msg64"), _ratio(cs, best, "bulk"), _median(cs, best, "rtt_p50")
    sbulk = _ratio(cs, "marlin stream", "bulk")
    hs1, hs32, mem = _ratio(cs, aq, "hs_seq"), _ratio(cs, aq, "hs_32"), _ratio(cs, aq, "conn_mem")
    out += [
        Target("tuned ordered 64 B msgs/s vs raw aioquic defaults", b64, ">= 3x", _check(b64, 3.0, True)),
        Target("tuned bulk MB/s vs raw aioquic defaults", bbulk, ">= 3x", _check(bbulk, 3.0, True)),
        Target("tuned RTT p50 (us)", brtt, "< 300", _check(brtt, 300.0, False)),
        Target("Marlin Stream bulk MB/s vs raw aioquic", sbulk, ">= 2x", _check(sbulk, 2.0, True)),
        Target("handshakes/s sequential vs raw aioquic", hs1, ">= 0.9x", _check(hs1, 0.9, True)),
        Target("handshakes/s 32 concurrent vs raw aioquic", hs32, ">= 0.9x", _check(hs32, 0.9, True)),
        Target("server memory per idle connection vs raw aioquic", mem, "<= 1.0x", _check(mem, 1.0, False)),
    ]
    idle_rtt, loaded = _median(cs, aq, "rtt_idle_server"), _median(cs, aq, "rtt_loaded")
    held = results.connections.get("aqueduct", {}).get("held")
    slower = _share(loaded, idle_rtt)
    out.append(Target(f"echo p50 with {held:,} idle connections vs idle server" if held is not None
                      else "echo p50 with the idle connections vs idle server", slower, "< 2x",
                      None if slower is None else slower < 2.0))
    for loss in (0.01, 0.05):
        k = _kernel_vs_raw(results, loss)
        out.append(Target(f"Aqueduct goodput at {loss:.0%} kernel loss vs raw aioquic", k, ">= 1.0x",
                          _check(k, 1.0, True)))
    at5 = next((r["x_lossless"] for r in results.loss if r["path"] == "marlin stream" and r["loss"] == 0.05), None)
    out.append(Target("Marlin Stream goodput at 5% loss vs 0% (same proxy)", at5, ">= 0.5x", _check(at5, 0.5, True)))
    k5 = next((r["x_lossless"] for r in results.kernel_loss if r["path"] == "marlin stream" and r["loss"] == 0.05),
              None)
    out.append(Target("Marlin Stream goodput at 5% kernel loss vs 0%", k5, ">= 0.5x", _check(k5, 0.5, True)))
    e = results.engine
    curve = e.get("throughput_vs_channels") or []
    flat = curve[-1][1] / curve[0][1] if curve and curve[0][1] else None
    cascade, idle = e.get("cascade_ms"), e.get("idle_channel_bytes_traced")
    out += [
        Target(f"engine cascade over {e['cascade_channels']} channels (ms)" if e else "engine cascade (ms)",
               cascade, "< 100", None if cascade is None else cascade < 100),
        Target("engine memory per idle channel, both ends (B, traced)", idle, "< 2048",
               None if idle is None else idle < 2048),
        Target(f"engine msgs/s at {curve[-1][0]} vs {curve[0][0]} open channels" if curve
               else "engine msgs/s at many vs few open channels", flat, ">= 0.8x (flat)", _check(flat, 0.8, True)),
    ]
    return out


@dataclass(frozen=True)
class Spread:
    """A same-run ratio as the median of its per-round ratios (rounds alternate), with their lowest and highest."""

    median: float
    low: float
    high: float
    rounds: int


def _per_round(a: list[float] | None, b: list[float] | None) -> Spread | None:
    """a / b round by round (each round measured both), or None when either is missing or rounds differ."""
    if not a or not b or len(a) != len(b) or not all(b):
        return None
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return Spread(statistics.median(ratios), min(ratios), max(ratios), len(ratios))


def _cpu_per_call(results: Results, row: str) -> list[float] | None:
    values = results.services.get(row)
    if not values or "client_cpu_us" not in values:
        return None
    return [c + s for c, s in zip(values["client_cpu_us"], values["server_cpu_us"], strict=True)]


CHANNEL_PER_CALL = "aqueduct typed request"
"""The peer row issue 34's targets name: every call a fresh oneshot on a typed entrypoint
(tests/bench/test_peer_rows_count.py proves it on the server)."""


def channel_per_call_targets(results: Results) -> list[tuple[Target, Spread | None]]:
    """Issue 34's targets (a channel per call at gRPC's cost or less), each with its per-round spread: the request
    row against grpcio aio TLS (`--peers`), a typed service call's CPU against a plain request's (the service
    rows, which `--peers` runs too), 64 B ordered and typed one way and connect to the first reply against raw
    aioquic (the default rows)."""
    s = results.samples

    def ratio(a: str, b: str, key: str, key_b: str | None = None) -> Spread | None:
        return _per_round(s.get(a, {}).get(key), s.get(b, {}).get(key_b or key))

    out: list[tuple[Target, Spread | None]] = []

    def add(name: str, spread: Spread | None, goal: float, at_least: bool) -> None:
        value = None if spread is None else spread.median
        out.append((Target(name, value, f"{'>=' if at_least else '<='} {goal:g}x", _check(value, goal, at_least)),
                    spread))

    call = CHANNEL_PER_CALL
    add("typed fresh-oneshot calls/s, 1 in flight, vs grpcio aio TLS", ratio(call, GRPC_TLS, "rr1"), 1.0, True)
    add("typed fresh-oneshot p50, 1 in flight, vs grpcio aio TLS", ratio(call, GRPC_TLS, "rr1_p50"), 1.0, False)
    add("typed fresh-oneshot calls/s, 32 in flight, vs grpcio aio TLS", ratio(call, GRPC_TLS, "rr32"), 3.0, True)
    add("typed service call CPU vs plain request (1 in flight)",
        _per_round(_cpu_per_call(results, "service call (1 in flight)"),
                   _cpu_per_call(results, "aqueduct.request fresh oneshot (1 in flight)")), 1.1, False)
    add("64 B ordered one way vs raw aioquic", ratio("aqueduct ordered raw", "aioquic", "msg64"), 1.0, True)
    add("typed 64 B one way vs untyped (cbor)", ratio("aqueduct ordered cbor typed", "aqueduct ordered cbor",
                                                      "msg64"), 0.9, True)
    add("connect to first reply, 1-RTT, vs raw aioquic", ratio("aqueduct ordered raw", "aioquic", "setup_1rtt"),
        1.0, False)
    add("connect to first reply, 0-RTT, vs raw aioquic", ratio("aqueduct ordered raw", "aioquic", "setup_0rtt"),
        1.0, False)
    return out


def channel_per_call_lines(results: Results) -> list[str]:
    """The issue 34 targets block: each target's median per-round ratio, the rounds' low and high, met or NOT."""
    lines = ["targets, issue 34 (a channel per call at gRPC's cost or less; median of per-round ratios, "
             "[lowest-highest round]):"]
    for t, spread in channel_per_call_targets(results):
        mark = {True: "met", False: "NOT met", None: "n/a"}[t.met]
        value = "-" if spread is None else f"{spread.median:.2f}x"
        across = "" if spread is None else f"[{spread.low:.2f}-{spread.high:.2f}, {spread.rounds} rounds]"
        lines.append(f"  {t.name:<56} {value:>7} {across:<24} goal {t.goal:<7} {mark}")
    return lines


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def service_lines(results: Results) -> list[str]:
    """The service rows (`--services`): calls/s, p50 and p99 per kind and calls in flight, medians of rounds."""
    if not results.services:
        return []
    lines = ["service rows (medians over rounds, calls/s with the rounds' lowest-highest; one run, same peer "
             "process; CPU per call: this process, the peer):"]
    width = max(len(row) for row in results.services)
    for row, values in results.services.items():
        rate, p50, p99 = (_fmt(statistics.median(values[k])) for k in ("calls_s", "p50_us", "p99_us"))
        spread = f"[{_fmt(min(values['calls_s']))}-{_fmt(max(values['calls_s']))}]"
        cpu = "".join(f" {_fmt(statistics.median(values[k])):>7}" for k in ("client_cpu_us", "server_cpu_us")
                      if k in values)
        lines.append(f"  {row:<{width}} {rate:>8} calls/s {spread:<17}  p50 {p50:>8} us  p99 {p99:>8} us" +
                     (f"  CPU us/call{cpu}" if cpu else ""))
    return lines


def table(results: Results) -> str:
    """The terminal table: one row per cell, then memory, engine costs and targets."""
    cs = cells(results)
    rounds = max((c.rounds for c in cs), default=0)
    tw = max([len("transport"), *(len(c.transport) for c in cs)])  # (the columns fit their longest entry)
    ww = max([len("workload"), *(len(f"{BY_KEY[c.workload].title} ({BY_KEY[c.workload].unit})")
                                  for c in cs)])
    head = f"{'workload':<{ww}} {'transport':<{tw}} {'median':>10} {'min':>10} {'max':>10}  {'vs ref':>8}"
    lines = [f"aqueduct bench: medians of {rounds} alternating rounds; 'vs ref' = median / raw aioquic's "
             "(datagrams for unreliable, a stream per message for unordered); for us and ms lower is better"]
    if any(name.endswith(" tuned") for name in results.samples):
        lines.append(f"'tuned' rows: {TUNED_PACKET_SIZE} B UDP payloads, their own processes on "
                     f"{results.environment.get('tuned_loop', 'asyncio')}; every other row: aioquic defaults, "
                     f"{results.environment.get('loop', 'asyncio')}")
    lines += [head, "-" * len(head)]
    last = ""
    for c in cs:
        w = BY_KEY[c.workload]
        title = f"{w.title} ({w.unit})" if c.workload != last else ""
        last = c.workload
        ratio = f"{c.ratio:.2f}x" if c.ratio is not None else "-"
        lines.append(f"{title:<{ww}} {c.transport:<{tw}} {_fmt(c.median):>10} {_fmt(c.low):>10} {_fmt(c.high):>10}  "
                     f"{ratio:>8}")
    peer_names = {n for n in [*results.samples, *results.unmeasured] if n not in BY_NAME}
    if peer_names:
        lines.append("peer rows: each server alone in its process, each round measured by a fresh process; "
                     "request/reply 'vs ref' = median / grpcio TLS's; CPU per call: client process and server "
                     "processes (NATS: responder + nats-server); memory per idle connection: first round only")
    for name, why in results.unmeasured.items():
        lines.append(f"{'peer ' if name in peer_names else ''}{name}: {why}")
    if results.zero_rtt_accepted:
        lines.append("0-RTT accepted: " + ", ".join(f"{k} {v}" for k, v in results.zero_rtt_accepted.items()))
    m = results.api_memory
    if m:
        lines.append(f"API memory per idle channel ({m['channels']:,.0f} channels): {m['per_channel_bytes']:,.0f} B "
                     f"(sender side {m['sender_side_bytes']:,.0f} B, receiver side {m['receiver_side_bytes']:,.0f} B)")
    e = results.engine
    if e:
        lines.append(f"engine: cascade over {e['cascade_channels']:,} channels {e['cascade_ms']:.1f} ms "
                     f"({e['cascade_lost']:,} ended LOST); idle channel {e['idle_channel_bytes_traced']:,.0f} B traced "
                     f"at {e['idle_channel_bytes_traced_count']:,}, {e['idle_channel_bytes_rss']:,.0f} B RSS at "
                     f"{e['idle_channel_bytes_rss_count']:,} (both ends)")
        lines.append("engine msgs/s vs open channels: "
                     + ", ".join(f"{n:,}: {rate:,.0f}" for n, rate in e["throughput_vs_channels"]))
    for kind, hold in results.connections.items():
        lines.append(f"connections: {kind} server held {hold['held']:,} of {hold['asked']:,} idle connections "
                     f"(opened in {hold['opened_seconds']:.1f} s, 32 at a time, {hold['failed']:,} attempts failed); "
                     f"connect to the idle server {hold['connect_ms_idle_server']:.1f} ms; new connections that "
                     f"failed while it held them: {hold.get('loaded_connects_failed', 0)}")
    lines += service_lines(results)
    if results.loss:
        lines.append("goodput under loss (bulk MB/s through the impairment proxy, both ways; TCP cannot pass it):")
        lines += [_loss_line(r) for r in results.loss]
    if results.kernel_loss:
        lines.append("goodput under kernel loss (bulk MB/s; a network namespace's loopback drops packets at random, "
                     "both ways; TCP included):")
        lines += [_loss_line(r) for r in results.kernel_loss]
    elif results.kernel_loss_unavailable and results.loss:
        lines.append(f"goodput under kernel loss: not measured ({results.kernel_loss_unavailable})")
    lines += channel_per_call_lines(results)
    lines.append("targets:")
    ts = targets(results)
    nw = max(len(t.name) for t in ts)
    for t in ts:
        mark = {True: "met", False: "NOT met", None: "n/a"}[t.met]
        value = "-" if t.value is None else _fmt(t.value)
        lines.append(f"  {t.name:<{nw}} {value:>10}  goal {t.goal:<16} {mark}")
    built = results.environment.get("compiled") or {}
    if built:
        lines.append(f"wire and engine: {built.get('reason')}")
    lines.append(f"run took {results.seconds:.0f} s; load average at start "
                 f"{', '.join(f'{x:.1f}' for x in results.environment.get('load_average', []))}")
    return "\n".join(lines)


def _loss_line(r: dict[str, Any]) -> str:
    ratio = "-" if r["x_lossless"] is None else f"{r['x_lossless']:.2f}x"
    return (f"  {r['path']:<26} {r['loss']:>4.0%} loss {_fmt(r['mb_s']):>10} {_fmt(r['low']):>10} "
            f"{_fmt(r['high']):>10}  {ratio:>8} of 0%")


def as_json(results: Results) -> dict[str, Any]:
    """Everything, machine-readable."""
    return {
        "environment": results.environment,
        "options": results.options,
        "cells": [c.__dict__ for c in cells(results)],
        "samples": results.samples,
        "zero_rtt_accepted": results.zero_rtt_accepted,
        "api_memory": results.api_memory,
        "engine": results.engine,
        "loss_curves": results.loss,
        "kernel_loss_curves": results.kernel_loss,
        "connections": results.connections,
        "unmeasured": results.unmeasured,
        "services": results.services,
        "targets": [t.__dict__ for t in targets(results)],
        "channel_per_call_targets": [{**t.__dict__, "spread": None if sp is None else sp.__dict__}
                                     for t, sp in channel_per_call_targets(results)],
        "seconds": results.seconds,
    }


def plot(results: Results, path: str) -> None:
    """A PNG: one bar chart per workload (median, min-max whiskers) and the engine's channel curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cs = cells(results)
    keys = [w for w in WORKLOADS if any(c.workload == w.key for c in cs)]
    n = len(keys) + (1 if results.engine else 0)
    cols = 3
    rows = max(1, (n + cols - 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.6 * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax, w in zip(flat, keys, strict=False):
        mine = [c for c in cs if c.workload == w.key]
        ax.barh([c.transport for c in mine], [c.median for c in mine],
                xerr=[[c.median - c.low for c in mine], [c.high - c.median for c in mine]], color="steelblue")
        ax.set_title(f"{w.title} ({w.unit})", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.invert_yaxis()
    if results.engine:
        ax = flat[len(keys)]
        curve = results.engine["throughput_vs_channels"]
        ax.semilogx([n for n, _ in curve], [r for _, r in curve], marker="o")
        ax.set_ylim(bottom=0)
        ax.set_title("engine msgs/s vs open idle channels", fontsize=9)
    for ax in flat[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
