"""`kineto-sql new`: a detector .sql file and its test file beside it, from templates, ready to edit."""
from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.catalog.spec import AREA_KINDS
from kineto_sql.errors import QueryError
from kineto_sql.devtools.lint import SQL_KEYWORDS
from kineto_sql.catalog.cases import test_path as rule_test_path
from kineto_sql.sql.package import PACKAGE, package_dir

_WORD = re.compile(r"^[a-z_][a-z0-9_]*$")

TEST_TEMPLATE = """# __QUERY_ID__: exact-row cases ([[case]]) and golden/corpus trace checks ([traces]).
# Format: kineto_sql/catalog/cases.py and queries/README.md; tests/test_rules.py runs every rule's file.
#
# Add at least one case that fires (lint requires it; name it in the rule's `-- example:`), and one just
# under the threshold that stays silent. Times are us here, as Kineto writes them; the rule sees ns.
# `kineto-sql try __QUERY_ID__ golden/traces --write-cases` appends [traces] checks for real traces.
#
# [[case]]
# name = "fires_on_a_long_op"
# events = [
#   { type = "ProfilerStep", step = 1, ts_us = 0, dur_us = 5000 },
#   { type = "CpuOp", name = "aten::slow", ts_us = 10, dur_us = 2000 },
# ]
# expect_count = 1
# columns = ["step", "dur"]
# rows = [[1, 2000000]]
"""

SITE_PACKAGES = ("site-packages", "dist-packages")


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


def scaffold(target: str, root: Path | None = None) -> Scaffold:
    """Writes queries/kineto/<area>/<name>.sql and its <name>.test.toml beside it; refuses to overwrite."""
    area, name = parse_target(target)
    base = Path(root) if root else package_dir()
    if root is None and any(part in SITE_PACKAGES for part in base.parts):
        raise QueryError(f"kineto-sql is installed in {base.parents[1]}, not run from a clone: clone the repository "
                         "and `pip install -e .` there, so the new rule lands in your source tree")
    query_id = f"{area}.{name}"
    sql_path = base / area / f"{name}.sql"
    test_path = rule_test_path(sql_path)
    for path in (sql_path, test_path):
        if path.exists():
            raise QueryError(f"{path} already exists; pick another name or edit it")
    kind = AREA_KINDS[area]
    template_name = "sql/scaffold_detector.sql" if kind == "detector" else "sql/scaffold_query.sql"
    template = importlib.resources.files("kineto_sql").joinpath(template_name).read_text()
    entrypoint = f"{PACKAGE}_{area}_{name}"
    sql_path.parent.mkdir(parents=True, exist_ok=True)
    sql_path.write_text(template.replace("__QUERY_ID__", query_id).replace("__ENTRYPOINT__", entrypoint)
                        .replace("__KIND__", kind).replace("__NAME__", name))
    test_path.parent.mkdir(parents=True, exist_ok=True)
    test_path.write_text(TEST_TEMPLATE.replace("__QUERY_ID__", query_id))
    return Scaffold(query_id, sql_path, test_path)
