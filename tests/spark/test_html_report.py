"""`aqueduct report DIR -o report.html`, opened in a real headless Chromium (Debian's; setup-system.sh chromium)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

from aqueduct.recording import read_events
from aqueduct.recording.synthetic import SyntheticSpec, generate

ROOT = Path(__file__).parents[2]


pytestmark = pytest.mark.requires_system("java")


def _browse(chromium: str, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args, page.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=page.parent,
    )  # fmt: skip


def test_report_is_one_file_a_browser_shows_with_its_figures(chromium: str, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    generate(rec, SyntheticSpec(connections=2, channels=4, messages=80, loss=0.05, seed=11))
    page = tmp_path / "report.html"
    command = Path(sys.executable).with_name("aqueduct")
    result = subprocess.run(
        [str(command), "report", str(rec), "-o", str(page), "--master", "local[1]", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=240, env=dict(os.environ),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    html = page.read_text()
    assert not re.search(r"""(src|href)=['"](?!data:)""", html)  # self-contained: nothing loaded from elsewhere
    assert html.count("data:image/png;base64,") == 2

    dom = _browse(chromium, page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout
    summary = re.search(r"id=\"section-summary\".*?</section>", text, re.S)
    assert summary is not None
    for figure in ("Per delivery mode", "unreliable", "conn-0001", "packets_lost: QUIC packets", "percentiles"):
        assert figure in text, figure
    assert f"<td>{len(read_events(rec)):,}</td>" in summary.group(0)  # the event count, as the browser parsed it

    shot = tmp_path / "shot.png"
    run = _browse(chromium, page, f"--screenshot={shot}", "--window-size=1200,1800")
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    pixels = matplotlib.image.imread(str(shot))[..., :3]
    non_white = (pixels.min(axis=2) < 0.9).mean()
    assert pixels.shape[:2] == (1800, 1200)
    assert non_white > 0.03, non_white  # text, tables and the charts drew something
