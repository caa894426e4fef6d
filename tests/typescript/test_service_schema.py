"""The TypeScript stub tests (clients/typescript/test/services.test.ts) type their calls with types generated from a
schema fixture: this keeps that fixture equal to what `aqueduct schema` prints today for examples/services.py's
Calculator, so a change to the interface or to the schema format fails here until the fixture is regenerated:

    (cd examples && aqueduct schema services:Calculator) > clients/typescript/test/fixtures/calculator.schema.txt
    (cd clients/typescript && npm run fixtures)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "clients" / "typescript" / "test" / "fixtures" / "calculator.schema.txt"


def test_schema_fixture_is_what_aqueduct_schema_prints() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "examples")}
    out = subprocess.run([sys.executable, "-m", "aqueduct", "schema", "services:Calculator"], cwd=ROOT / "examples",
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == FIXTURE.read_text(), __doc__
