"""`kineto-sql new`: a detector .sql file and its unit test, from templates, ready to edit."""
from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.catalog import AREA_KINDS
from kineto_sql.errors import QueryError
from kineto_sql.lint import SQL_KEYWORDS
from kineto_sql.sql_package import PACKAGE, package_dir

_WORD = re.compile(r"^[a-z_][a-z0-9_]*$")

TEST_TEMPLATE = '''"""Unit tests of __QUERY_ID__ on tiny hand-built traces (scaffolded by `kineto-sql new`; edit me)."""
from kineto_sql.runner import run_query
from tests.kineto_builder import CpuOp, KinetoTrace, ProfilerStep
from tests.query_support import load_trace  # noqa: F401  (fixture)


def test_fires_on_a_long_op(load_trace):
    trace = KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=5000), CpuOp("aten::slow", ts_us=10, dur_us=2000),
                         CpuOp("aten::fast", ts_us=3000, dur_us=5)])
    run = run_query(load_trace(trace), "__QUERY_ID__")
    assert run.df[["step", "dur"]].values.tolist() == [[1, 2_000_000]]


def test_silent_on_short_ops(load_trace):
    trace = KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=5000), CpuOp("aten::fast", ts_us=10, dur_us=5)])
    assert run_query(load_trace(trace), "__QUERY_ID__").df.empty
'''


@dataclass(frozen=True)
class Scaffold:
    query_id: str
    sql_path: Path
    test_path: Path


def parse_target(target: str) -> tuple[str, str]:
    """`catalog.my_fault` -> ('catalog', 'my_fault'); a bare slug goes to the catalog area."""
    area, _, name = target.rpartition(".")
    area = area or "catalog"
    for word in (area, name):
        if not _WORD.match(word) or word in SQL_KEYWORDS:
            raise QueryError(f"{target!r}: use AREA.NAME or NAME with lowercase SQL words (not keywords), "
                             "e.g. catalog.sync_forcing_op")
    if area not in AREA_KINDS:
        raise QueryError(f"area {area!r} is not one of {', '.join(AREA_KINDS)}")
    return area, name


def scaffold(target: str, root: Path | None = None, tests_dir: Path | None = None) -> Scaffold:
    """Writes queries/kineto/<area>/<name>.sql and tests/queries/test_<area>_<name>.py; refuses to overwrite."""
    area, name = parse_target(target)
    base = Path(root) if root else package_dir()
    tests = Path(tests_dir) if tests_dir else base.parent.parent / "tests" / "queries"
    query_id = f"{area}.{name}"
    sql_path = base / area / f"{name}.sql"
    test_path = tests / f"test_{area}_{name}.py"
    for path in (sql_path, test_path):
        if path.exists():
            raise QueryError(f"{path} already exists; pick another name or edit it")
    template = importlib.resources.files("kineto_sql").joinpath("sql/scaffold_detector.sql").read_text()
    entrypoint = f"{PACKAGE}_{area}_{name}"
    sql_path.parent.mkdir(parents=True, exist_ok=True)
    sql_path.write_text(template.replace("__QUERY_ID__", query_id).replace("__ENTRYPOINT__", entrypoint))
    test_path.parent.mkdir(parents=True, exist_ok=True)
    test_path.write_text(TEST_TEMPLATE.replace("__QUERY_ID__", query_id))
    return Scaffold(query_id, sql_path, test_path)
