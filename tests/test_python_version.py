"""The oldest Python kineto-sql claims (`requires-python`) is the one its code is written for: 3.11, where
`tomllib` is in the standard library (3.10 has no tomllib; the claim says 3.11 rather than carry a tomli
fallback). CI (.ci/run) installs with the machine's python3, 3.11 here, so the suite runs on the oldest claimed
version; on a newer interpreter, every module must still parse with 3.11's grammar."""
from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLDEST = (3, 11)


def test_requires_python_says_the_oldest_version_the_code_runs_on():
    claimed = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert claimed == ">=3.11"
    assert metadata("kineto-sql")["Requires-Python"] == claimed   # the installed metadata says the same
    assert sys.version_info[:2] >= OLDEST


SOURCES = sorted(p for d in ("kineto_sql", "cli", "tests", "bench", "golden") for p in (ROOT / d).rglob("*.py")
                 if "__pycache__" not in p.parts)


def test_every_module_parses_with_the_oldest_grammar():
    """No syntax newer than 3.11 (PEP 695 `type` aliases and generics, PEP 701 f-strings reusing their quote):
    a newer interpreter would accept it, 3.11 would not import the module."""
    assert len(SOURCES) > 200
    wrong = []
    for path in SOURCES:
        try:
            ast.parse(path.read_text(), str(path), feature_version=OLDEST)
        except SyntaxError as exc:
            wrong.append(f"{path.relative_to(ROOT)}:{exc.lineno}: {exc.msg}")
    assert wrong == []
