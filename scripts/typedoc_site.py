"""The TypeScript client's API reference on the documentation site (scripts/mkdocs_hooks.py calls this).

Theory of operation. TypeDoc (clients/typescript, `npm run docs`, configured by its typedoc.json) writes HTML into
clients/typescript/docs-api/; the site serves those files under `typescript-api/`, so a guide links
`typescript-api/index.html`. TypeDoc runs at site build time when the package's npm packages are installed
(scripts/setup-node.sh, the `node` piece of scripts/setup-system.sh) and its output is older than the sources;
without them the site serves one page saying how to get the reference, so the link always resolves and
`mkdocs build --strict` passes either way.
"""

from __future__ import annotations

import fcntl
import logging
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "clients" / "typescript"
OUT = PACKAGE / "docs-api"
SITE_DIR = "typescript-api"

log = logging.getLogger("mkdocs.hooks.typedoc")

PLACEHOLDER = """<!doctype html><meta charset="utf-8"><title>TypeScript API reference</title>
<h1>TypeScript API reference</h1>
<p>This build of the site was made without the TypeScript client's npm packages. Run
<code>bash scripts/setup-node.sh</code>, then build the site again (or <code>npm run docs</code> in
<code>clients/typescript</code>, which writes the reference into <code>clients/typescript/docs-api/</code>).</p>
"""


def _stale() -> bool:
    index = OUT / "index.html"
    if not index.exists():
        return True
    built = index.stat().st_mtime
    sources = [PACKAGE / "typedoc.json", PACKAGE / "README.md", *(PACKAGE / "src").rglob("*.ts")]
    return any(p.stat().st_mtime > built for p in sources)


def build() -> bool:
    """Run TypeDoc if its output is stale; whether a reference is there (False: the packages are not installed)."""
    if not (PACKAGE / "node_modules" / ".bin" / "typedoc").exists():
        log.info("TypeScript API reference: clients/typescript has no node_modules (bash scripts/setup-node.sh)")
        return False
    with open(PACKAGE / ".npm-install.lock", "w") as lock:  # (tests/typescript/npm.py's lock: one npm at a time)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stale():
            out = subprocess.run(["npm", "run", "-s", "docs"], cwd=PACKAGE, capture_output=True, text=True,
                                 timeout=600)
            if out.returncode != 0:
                log.warning("TypeDoc failed (npm run docs in clients/typescript):\n%s%s", out.stdout, out.stderr)
                return False
    return True


def files(config: Any) -> list[Any]:
    """The site's files under typescript-api/: TypeDoc's output, or the page saying how to make it."""
    from mkdocs.structure.files import File

    if not build():
        return [File.generated(config, f"{SITE_DIR}/index.html", content=PLACEHOLDER)]
    return [File.generated(config, f"{SITE_DIR}/{path.relative_to(OUT).as_posix()}", abs_src_path=str(path))
            for path in sorted(OUT.rglob("*")) if path.is_file()]
