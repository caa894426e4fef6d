"""The site in a real browser: headless Chromium (Debian's: setup-system.sh chromium) driven by Playwright, which
uses that executable (it downloads no browser of its own). The built site is served over HTTP on loopback,
as `mkdocs serve` would (the search runs in a web worker, which a file:// page cannot start). The home page,
the Typed channels guide and the API page of `Sender` each render their title and their first code block
with no console error and no failed request; the search, typed into as a reader would, finds "oneshot".
Screenshots go to out/docs-screenshots/ (gitignored) for a person to look at."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, sync_playwright

from tests.harness.http import quiet_files, serving

from .blocks import block
from .conftest import ROOT

SHOTS = ROOT / "out" / "docs-screenshots"
# path on the site -> (its title, a line of its first code block)
PAGES = {
    "": ("aqueduct-quic", block("README.md", "./scripts/demo.sh").code.splitlines()[0]),
    "typed-channels/": ("Typed channels", block("docs/typed-channels.md", "class Quote").code.splitlines()[0]),
    "reference/aqueduct/Sender/": ("aqueduct.Sender", "Sender("),
}



@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    with serving(quiet_files(site)) as origin:
        yield f"{origin}/"


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield launched
        finally:
            launched.close()


def _open(browser: Any, url: str) -> tuple[Page, list[str]]:
    """A new page at `url`, loaded, with a list that collects its console errors and failed requests."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url} {req.failure}"))
    page.on("response", lambda resp: problems.append(f"HTTP {resp.status}: {resp.url}") if resp.status >= 400 else None)
    page.goto(url, wait_until="networkidle")
    return page, problems


@pytest.mark.parametrize("path", list(PAGES), ids=["home", "typed-channels", "api-Sender"])
def test_page_renders_title_and_first_code_block(browser: Any, served: str, path: str) -> None:
    title, code_line = PAGES[path]
    page, problems = _open(browser, served + path)
    heading = page.locator("article h1").first
    assert heading.is_visible() and heading.inner_text().strip().rstrip("¶").strip() == title
    assert title.rsplit(".", 1)[-1] in page.title()  # the nav name: "Sender - aqueduct-quic"
    first_code = page.locator("article pre code").first
    first_code.scroll_into_view_if_needed()
    assert first_code.is_visible()
    assert first_code.inner_text().splitlines()[0].strip() == code_line.strip() or code_line in first_code.inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{path.strip('/').replace('/', '-') or 'home'}.png"))
    assert problems == []
    page.close()


def test_no_code_block_is_cut_off_at_1280_px(browser: Any, served: str) -> None:
    """Every code block of the guides shows its whole width: none scrolls sideways (its lines wrap instead)."""
    cut = {}
    for page_md in sorted((ROOT / "docs").glob("*.md")):
        path = "" if page_md.stem == "index" else f"{page_md.stem}/"
        page, problems = _open(browser, served + path)
        widths = page.eval_on_selector_all("article pre > code", "els => els.map(e => [e.scrollWidth, e.clientWidth])")
        cut[page_md.name] = sum(1 for scroll, client in widths if scroll > client + 1)
        if page_md.stem == "services":
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "services.png"), full_page=True)
        assert problems == [], page_md.name
        page.close()
    assert {name: n for name, n in cut.items() if n} == {}


def test_search_finds_oneshot(browser: Any, served: str) -> None:
    page, problems = _open(browser, served)
    search = page.locator("input.md-search__input")  # the header's search box (wide screens show it)
    search.click()
    search.press_sequentially("oneshot")
    results = page.locator("li.md-search-result__item")
    results.first.wait_for(state="visible", timeout=30_000)
    links = [results.nth(i).locator("a").first.get_attribute("href") or "" for i in range(results.count())]
    assert any("reference/aqueduct/oneshot" in link for link in links), links
    assert any("typed-channels" in link for link in links), links
    assert "matching document" in page.locator(".md-search-result__meta").inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "search-oneshot.png"))
    assert problems == []
    page.close()
