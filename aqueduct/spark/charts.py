"""PNG charts of an analysis, drawn with matplotlib's Agg backend (no display needed).

`throughput.png`: messages/s and bytes/s over time, one line per direction.
`latency.png`: the ack-latency histogram per delivery mode on a log axis.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa


def draw(tables: dict[str, pa.Table], out_dir: Path) -> list[Path]:
    """Draw the charts into `out_dir`; their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    tl = tables["timeline"].to_pydict()
    fig, (ax_m, ax_b) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    width = tl["width_s"][0] if tl["width_s"] else 1.0
    buckets = round(max(tl["t_s"], default=0.0) / width) + 1
    grid = [i * width for i in range(buckets)]
    for direction in sorted(set(tl["direction"])):
        msgs, mb = [0.0] * buckets, [0.0] * buckets  # buckets without messages are zero, not gaps
        for t, d, m, b in zip(tl["t_s"], tl["direction"], tl["msgs_per_s"], tl["bytes_per_s"], strict=True):
            if d == direction:
                msgs[round(t / width)], mb[round(t / width)] = m, b / 1e6
        marker = "o" if buckets < 3 else None
        ax_m.plot(grid, msgs, drawstyle="steps-post", marker=marker, label=direction)
        ax_b.plot(grid, mb, drawstyle="steps-post", marker=marker, label=direction)
    ax_m.set_ylabel("messages/s")
    ax_b.set_ylabel("MB/s")
    ax_b.set_xlabel("seconds since the first event")
    ax_m.legend(title="direction")
    ax_m.set_title("Throughput")
    fig.tight_layout()
    paths.append(out_dir / "throughput.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)

    hist = tables["latency_histogram"].to_pydict()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for mode in sorted(set(hist["delivery"])):
        idx = [i for i, d in enumerate(hist["delivery"]) if d == mode]
        ax.bar(
            [hist["lo_us"][i] for i in idx],
            [hist["count"][i] for i in idx],
            width=[hist["hi_us"][i] - hist["lo_us"][i] for i in idx],
            align="edge",
            alpha=0.5,
            label=mode,
        )
    ax.set_xscale("log")
    ax.set_xlabel("ack latency (µs)")
    ax.set_ylabel("messages")
    ax.set_title("Ack latency distribution")
    if hist["delivery"]:
        ax.legend(title="delivery")
    fig.tight_layout()
    paths.append(out_dir / "latency.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    return paths
