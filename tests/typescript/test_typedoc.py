"""The TypeScript API reference on the documentation site (scripts/typedoc_site.py, called by the MkDocs hooks):
TypeDoc's HTML served under typescript-api/ when the npm packages are installed, a page saying how to get it when
they are not, so a guide's link to typescript-api/index.html always resolves."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.typescript.npm import installed

ROOT = Path(__file__).resolve().parents[2]


def _typedoc_site() -> Any:
    spec = importlib.util.spec_from_file_location("typedoc_site", ROOT / "scripts" / "typedoc_site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config(tmp_path: Path) -> Any:
    from mkdocs.config.defaults import MkDocsConfig

    (tmp_path / "docs").mkdir(exist_ok=True)
    config = MkDocsConfig()
    config.load_dict({"site_name": "t", "docs_dir": str(tmp_path / "docs"), "site_dir": str(tmp_path / "site")})
    errors, _warnings = config.validate()
    assert not errors
    config.plugins._current_plugin = None  # (set by MkDocs while it runs a hook's event, as when it calls on_files)
    return config


def test_reference_is_typedocs_html_under_typescript_api(tmp_path: Path) -> None:
    installed()
    site = _typedoc_site()
    assert site.build()
    index = (site.OUT / "index.html").read_text()
    assert "connect" in index and "Sender" in (site.OUT / "classes" / "index.Sender.html").read_text()
    urls = {f.src_uri for f in site.files(_config(tmp_path))}
    assert "typescript-api/index.html" in urls
    assert "typescript-api/classes/index.Sender.html" in urls


def test_without_the_packages_the_link_still_resolves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = _typedoc_site()
    monkeypatch.setattr(site, "PACKAGE", tmp_path / "no-package")
    files = site.files(_config(tmp_path))
    assert [f.src_uri for f in files] == ["typescript-api/index.html"]
    assert "scripts/setup-node.sh" in files[0].content_string
