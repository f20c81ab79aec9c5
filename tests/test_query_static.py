"""Static checks of every query file: header schema, naming, includes, lint clean, lock fresh."""
from __future__ import annotations

import textwrap

import pytest

from kineto_sql import lint, versions
from kineto_sql.catalog import coerce_value, load_catalog, parse_query_file
from kineto_sql.errors import QueryError
from kineto_sql.includes import kineto_dependencies
from kineto_sql.sql_package import package_dir

ALL_SQL = sorted(package_dir().rglob("*.sql"))


def _rel(path):
    return str(path.relative_to(package_dir()))


@pytest.mark.parametrize("path", ALL_SQL, ids=_rel)
def test_file_is_lint_clean(path):
    base = package_dir()
    spec = None
    problems = []
    if path.relative_to(base).parts[0] != "lib":
        spec, problems = parse_query_file(path, base)
    problems += lint.lint_file(path, base, spec)
    assert [str(p) for p in problems] == []


def test_catalog_has_the_reading_queries_with_their_params():
    cat = load_catalog()
    step_table = cat.get("reading.step_table")
    assert [(p.name, p.type, p.default) for p in step_table.params] == [
        ("sparse_below_pct", "DOUBLE", 50.0), ("cold_start_factor", "DOUBLE", 1.5)]
    assert step_table.needs == ("steps",)
    assert step_table.entrypoint == "kineto_reading_step_table"
    assert step_table.module == "kineto.reading.step_table"
    assert cat.get("reading.op_table").params[0].default == 0


def test_includes_resolve_in_dependency_order():
    deps = kineto_dependencies(load_catalog().get("reading.step_table").sql)
    assert deps.index("kineto.lib.event_categories") < deps.index("kineto.lib.steps") < deps.index("kineto.lib.cpu_ops")
    assert deps.index("kineto.lib.kernels") < deps.index("kineto.lib.stream_busy") < deps.index("kineto.lib.device_busy")


def test_lock_is_fresh():
    issues = versions.lock_issues()
    assert [f"{i.id}: {i.message}" for i in issues] == []


def test_normalized_sql_ignores_comments_and_whitespace_but_not_strings():
    a = "SELECT  a -- note\nFROM t WHERE b = 'x  --y'"
    b = "-- header\nSELECT a\n  FROM t\nWHERE b = 'x  --y' /* c */"
    assert versions.normalize_sql(a) == versions.normalize_sql(b) == "SELECT a FROM t WHERE b = 'x  --y'"
    assert versions.normalize_sql("SELECT 'a b'") != versions.normalize_sql("SELECT 'a  b'")


@pytest.mark.parametrize(("sql_type", "raw", "value"), [
    ("LONG", "1_000", 1000), ("LONG", 3.0, 3), ("DOUBLE", "2.5", 2.5), ("BOOL", "yes", True), ("BOOL", "0", False),
    ("STRING", "a'b", "a'b"),
])
def test_param_coercion(sql_type, raw, value):
    assert coerce_value(sql_type, raw) == value


@pytest.mark.parametrize(("sql_type", "raw"), [("LONG", "1.5"), ("DOUBLE", "nan"), ("BOOL", "maybe"), ("STRING", 3)])
def test_param_coercion_refuses(sql_type, raw):
    with pytest.raises(QueryError, match=f"wants a {sql_type} value"):
        coerce_value(sql_type, raw)


GOOD = textwrap.dedent("""\
    -- id: reading.demo
    -- version: 1
    -- kind: reading
    -- title: Demo
    -- source: test
    -- needs: none
    -- param top_n LONG 5: rows to keep

    -- The demo.
    CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_demo(
      -- Rows to keep.
      top_n LONG
    )
    RETURNS TABLE(
      -- A name.
      name STRING
    ) AS
    SELECT name FROM slice LIMIT $top_n;
    """)


def _lint_one(tmp_path, rel, text):
    root = tmp_path / "kineto"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return [p.message for p in lint.lint(root, check_lock=False)]


def test_lint_accepts_a_good_query(tmp_path):
    assert _lint_one(tmp_path, "reading/demo.sql", GOOD) == []


@pytest.mark.parametrize(("rel", "edit", "message"), [
    ("reading/demo.sql", ("name FROM slice LIMIT", "name FROM slice WHERE name LIKE 'a%' LIMIT"), "LIKE is banned"),
    ("reading/demo.sql", ("-- A name.\n", ""), "put a `-- comment` above column/argument name"),
    ("reading/demo.sql", ("-- The demo.\n", ""), "put a `-- comment` directly above function kineto_reading_demo"),
    ("reading/demo.sql", ("SELECT name FROM", "SELECT * FROM"), "instead of SELECT *"),
    ("reading/demo.sql", ("-- id: reading.demo", "-- id: reading.other"), "does not match the path"),
    ("reading/demo.sql", ("param top_n LONG 5", "param limit_n LONG 5"), "must equal kineto_reading_demo's arguments"),
    ("reading/demo.sql", ("param top_n LONG 5", "param top_n STRING 5"), "is STRING in the header but LONG"),
    ("reading/demo.sql", ("CREATE OR REPLACE PERFETTO", "CREATE PERFETTO"), "write CREATE OR REPLACE"),
    ("reading/demo.sql", ("-- kind: reading", "-- kind: detector"), "does not fit area reading"),
    ("reading/demo.sql", ("-- needs: none", "-- needs: gpus"), "is not a capability"),
    ("reading/demo.sql", ("-- version: 1", "-- version: one"), "version must be an integer"),
    ("reading/demo.sql", ("-- title: Demo\n", ""), "header lacks `-- title: ...`"),
    ("reading/demo.sql", ("LIMIT $top_n;", "LIMIT $top_n;\nINCLUDE PERFETTO MODULE kineto.lib.nope;"), "no such module"),
    ("reading/demo.sql", ("SELECT name FROM slice", "SELECT name FROM slice WHERE AND"), "does not parse as SQL"),
    ("reading/order.sql", ("reading.demo", "reading.order"), "must be a lowercase SQL identifier"),
])
def test_lint_finds(tmp_path, rel, edit, message):
    problems = _lint_one(tmp_path, rel, GOOD.replace(*edit))
    assert any(message in p for p in problems), problems


def test_lint_problems_name_file_and_line(tmp_path):
    root = tmp_path / "kineto"
    (root / "reading").mkdir(parents=True)
    (root / "reading" / "demo.sql").write_text(GOOD.replace("-- A name.\n", ""))
    [problem] = lint.lint(root, check_lock=False)
    assert str(problem).startswith(f"{root / 'reading' / 'demo.sql'}:15: ")


def test_detector_needs_the_envelope_columns(tmp_path):
    text = (GOOD.replace("reading.demo", "catalog.demo").replace("kind: reading", "kind: detector")
            .replace("kineto_reading_demo", "kineto_catalog_demo")
            .replace("-- needs: none", "-- needs: none\n-- signature: s\n-- confirming: c\n-- fix: f"))
    problems = _lint_one(tmp_path, "catalog/demo.sql", text)
    assert any("a detector's output starts with ts TIMESTAMP, dur DURATION" in p for p in problems), problems


def test_update_lock_refuses_a_forgotten_bump(tmp_path):
    root = tmp_path / "kineto"
    (root / "reading").mkdir(parents=True)
    query = root / "reading" / "demo.sql"
    query.write_text(GOOD)
    lock = tmp_path / "versions.lock"
    cat = lambda: load_catalog(root)  # noqa: E731
    assert versions.update_lock(cat(), lock) == []
    query.write_text(GOOD.replace("LIMIT $top_n", "LIMIT $top_n + 1"))
    [issue] = versions.lock_issues(cat(), lock)
    assert "bump `-- version:` to 2" in issue.message
    assert versions.update_lock(cat(), lock) != []
    query.write_text(GOOD.replace("LIMIT $top_n", "LIMIT $top_n + 1").replace("version: 1", "version: 2"))
    assert versions.update_lock(cat(), lock) == []
    assert versions.lock_issues(cat(), lock) == []
