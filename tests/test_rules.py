"""Every rule's own test file (`queries/kineto/<area>/<name>.test.toml`, format in kineto_sql/catalog/cases.py):
exact-row cases on tiny built traces, and fires / silent / not applicable on golden and corpus traces.

Snapshots alone would also pass an empty result; these files are the independent oracle. Golden pairs:
a detector fires on its planted trace and stays silent on the fixed twin. Corpus checks follow
../shared/corpus/MANIFEST.md's reading where the rule agrees; where it disagrees the file's comment says why.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from kineto_sql.catalog.spec import load_catalog
from kineto_sql.catalog.cases import SUFFIX, RowCase, TraceCheck, count_findings, load_rule_tests
from kineto_sql.run.runner import run_query
from kineto_sql.sql.package import package_dir
from tests.kineto_builder import from_case
from tests.query_support import canonical_value, load_trace, resolve_trace_name  # noqa: F401  (fixture)

CATALOG = load_catalog()
RULE_TESTS = {spec.id: load_rule_tests(spec.id, spec.path) for spec in CATALOG.specs}
CASES = [case for tests in RULE_TESTS.values() for case in tests.cases]
CHECKS = [check for tests in RULE_TESTS.values() for check in tests.checks]


def test_every_rule_has_a_readable_test_file():
    problems = [f"{t.path}: {p}" for t in RULE_TESTS.values() for p in t.problems]
    assert problems == []


def test_every_rule_is_checked_on_traces_or_cases():
    empty = sorted(rid for rid, t in RULE_TESTS.items() if not t.cases and not t.checks)
    assert empty == []


def test_no_test_file_without_its_rule():
    orphans = sorted(str(p) for p in package_dir().rglob(f"*{SUFFIX}") if not p.with_name(
        p.name.removesuffix(SUFFIX) + ".sql").exists())
    assert orphans == []


def test_redirects_never_reuse_an_id_and_point_at_live_queries():
    live = set(CATALOG.ids())
    reused = sorted(old for old, _ in CATALOG.redirects if old in live)
    dangling = sorted(f"{old} -> {new}" for old, new in CATALOG.redirects
                      if "." in new and " " not in new and new not in live)
    assert (reused, dangling) == ([], [])


def test_an_old_id_says_where_it_went():
    from kineto_sql.catalog.spec import Catalog
    from kineto_sql.errors import QueryError

    spec = CATALOG.specs[0]
    moved = Catalog((spec,), (), (("catalog.old_name", spec.id), ("catalog.gone", "merged into nothing")))
    with pytest.raises(QueryError, match=f"catalog.old_name was renamed to {spec.id}"):
        moved.get("catalog.old_name")
    with pytest.raises(QueryError, match="catalog.gone was removed: merged into nothing"):
        moved.get("catalog.gone")


def test_reference_is_current():
    from kineto_sql.devtools.page import reference, reference_path

    assert reference_path().exists() and reference_path().read_text() == reference(), (
        "queries/REFERENCE.md is stale: run `kineto-sql lint --update-lock`")


def _build(tmp_path: Path, case: RowCase) -> Path:
    if case.trace_json is not None:
        path = tmp_path / "case.json.gz"
        with gzip.open(path, "wt") as f:
            f.write(case.trace_json)
        return path
    return from_case(list(case.events), case.metadata).write(tmp_path, "case.json.gz")


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule_id}:{c.name}")
def test_case(tmp_path, case: RowCase):
    from kineto_sql import open_trace

    tp = open_trace(_build(tmp_path, case))
    try:
        run = run_query(tp, case.rule_id, case.params)
    finally:
        tp.close()
    if case.not_applicable:
        assert run.not_applicable is not None
        return
    assert run.not_applicable is None, run.not_applicable
    if case.expect_count is not None:
        assert len(run.df) == case.expect_count, run.df.to_string()
    if case.columns:
        got = sorted([canonical_value(v) for v in row] for row in run.df[list(case.columns)].itertuples(index=False))
        want = sorted([canonical_value(v) for v in row] for row in case.rows)
        assert got == want


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.id)
def test_trace_check(loaded, check: TraceCheck):
    path = resolve_trace_name(check.trace)
    if not path.exists():
        pytest.skip(f"{check.trace} is not recorded/present ({path})")
    if check.todo:
        pytest.xfail(check.todo)
    run = run_query(loaded(path), check.rule_id)
    if check.outcome == "not_applicable_on":
        assert run.not_applicable is not None
        return
    assert run.not_applicable is None, run.not_applicable
    count = count_findings(run.df, check.fires_when)
    if check.outcome == "fires_on":
        assert count >= 1, f"{check.rule_id} stayed silent on {check.trace}"
    else:
        assert count == 0, f"{check.rule_id} fired {count} time(s) on {check.trace}"
