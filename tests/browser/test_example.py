"""examples/browser/ in headless Chromium: the chart gets the points the server streams into the channel the page
handed it, and the form's typed call shows a quote and, for an item out of stock, the declared error."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from playwright.async_api import async_playwright

from .test_typescript_client import CHROMIUM_ARGS, _bundle

pytestmark = [pytest.mark.asyncio, pytest.mark.requires_system("chromium"), pytest.mark.requires_system("node")]
SERVER = Path(__file__).resolve().parents[2] / "examples" / "browser" / "server.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("browser_example", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["browser_example"] = module  # (msgspec and the service interface look their module up there)
    spec.loader.exec_module(module)
    return module


async def test_the_dashboard_draws_the_feed_and_the_form_calls_the_service(chromium: str) -> None:
    _bundle()
    example = _example()
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    server = asyncio.create_task(example.main(0, 0, ready))
    try:
        page_url = await asyncio.wait_for(ready, 30)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = await browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(page_url + "/")
            await page.wait_for_function("window.points >= 5", timeout=30_000)
            assert await page.inner_text("#status") == "connected over WebTransport"
            await page.select_option("select[name=item]", "pears")
            await page.fill("input[name=quantity]", "4")
            await page.click("button")
            await page.wait_for_function("document.getElementById('answer').textContent !== ''")
            assert await page.inner_text("#answer") == "4 pears: 3.00"
            await page.select_option("select[name=item]", "kiwis")
            await page.click("button")
            await page.wait_for_function("document.getElementById('answer').textContent.startsWith('OutOfStock')")
            assert await page.inner_text("#answer") == "OutOfStock: no kiwis today"
            assert errors == []
            await browser.close()
    finally:
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server
