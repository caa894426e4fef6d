"""Every rule of the Aqueduct protocol text has a test you can find: specs/TRACEABILITY.md is current and complete.

scripts/traceability.py builds the table from specs/rules.txt and the tests' `@pytest.mark.spec(...)` markers;
here it is built again and compared with the checked-in file, and it must report no rule without a test and
no marker naming an unknown rule.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def traceability() -> ModuleType:
    spec = importlib.util.spec_from_file_location("traceability", ROOT / "scripts" / "traceability.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_table_is_current_and_every_rule_has_a_test() -> None:
    text, problems = traceability().build(ROOT)
    assert problems == []
    assert (ROOT / "specs" / "TRACEABILITY.md").read_text() == text, "run: python scripts/traceability.py"


def test_the_marker_is_registered() -> None:
    import tomllib

    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("spec(") for m in markers)


def test_a_rule_without_a_test_and_an_unknown_rule_are_reported(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "specs" / "rules.txt").write_text("# comment\nkept | Frames | a | wire/frames.py\n"
                                                  "orphan | Frames | b | wire/frames.py\n")
    (tmp_path / "tests" / "test_x.py").write_text(
        "import pytest\n\n@pytest.mark.spec('kept', 'nope')\ndef test_one():\n    pass\n\n"
        "class TestTwo:\n    @pytest.mark.spec('kept')\n    def test_two(self):\n        pass\n")
    text, problems = traceability().build(tmp_path)
    assert problems == ["tests/test_x.py::test_one names unknown rule 'nope'", "rule 'orphan' has no test"]
    assert "`tests/test_x.py::TestTwo::test_two`<br>`tests/test_x.py::test_one`" in text


def test_a_malformed_rules_line_is_refused(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "rules.txt").write_text("only | two\n")
    with pytest.raises(ValueError, match=r"rules\.txt:1"):
        traceability().read_rules(tmp_path)
