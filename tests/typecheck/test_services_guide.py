"""The Services guide's snippet (docs/services.md) type-checks as it says: mypy rejects exactly the marked line."""

from __future__ import annotations

from pathlib import Path

from mypy import api

HERE = Path(__file__).parent


def test_services_guide_snippet_type_checks_as_it_says(tmp_path: Path) -> None:
    text = (HERE.parents[1] / "docs" / "services.md").read_text()
    block = text[text.index("# Services"):].split("```python\n", 1)[1].split("```", 1)[0]
    snippet = tmp_path / "services_guide.py"
    snippet.write_text(block)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n")
    out, _, _ = api.run([str(snippet), "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
                         "--config-file", str(config), "--no-error-summary"])
    errors = [line for line in out.splitlines() if ": error: " in line]
    wrong = next(n for n, line in enumerate(block.splitlines(), 1) if 'calc.add("1", 2)' in line)
    assert len(errors) == 1 and f":{wrong}: error: Argument 1 to \"add\" of \"Calculator\"" in errors[0], out
