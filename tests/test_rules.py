"""Every rule's own test file (`queries/kineto/<area>/<name>.test.toml`, format in kineto_sql/catalog/cases.py):
exact-row cases on tiny built traces, and fires / silent / not applicable on golden and corpus traces.

Snapshots alone would also pass an empty result; these files are the independent oracle. Golden pairs:
a detector fires on its planted trace and stays silent on the fixed twin. Corpus checks follow
../shared/corpus/MANIFEST.md's reading where the rule agrees; where it disagrees the file's comment says why.
"""
from __future__ import annotations

import pytest

from kineto_sql.catalog.spec import load_catalog
from kineto_sql.catalog.cases import SUFFIX, RowCase, TraceCheck, load_rule_tests
from kineto_sql.devtools.rule_tests import PASSED, check_failure, run_case
from kineto_sql.run.runner import run_query
from kineto_sql.sql.package import package_dir
from tests.query_support import load_trace, resolve_trace_name  # noqa: F401  (fixture)

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


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule_id}:{c.name}")
def test_case(tmp_path, case: RowCase):
    """The case as `kineto-sql test` runs it (kineto_sql/devtools/rule_tests.py): one judge for both."""
    outcome = run_case(case, directory=tmp_path)
    assert outcome.outcome == PASSED, outcome.message


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.id)
def test_trace_check(loaded, check: TraceCheck):
    path = resolve_trace_name(check.trace)
    if not path.exists():
        pytest.skip(f"{check.trace} is not recorded/present ({path})")
    if check.todo:
        pytest.xfail(check.todo)
    failure = check_failure(check, run_query(loaded(path), check.rule_id))
    assert failure is None, failure
