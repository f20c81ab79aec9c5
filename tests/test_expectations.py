"""tests/expectations.toml: each query fires where it must, stays silent where it must, and says "not
applicable" where the trace lacks what it needs. Snapshots alone would also pass an empty result."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from kineto_sql.catalog import load_catalog
from kineto_sql.runner import run_query
from tests.query_support import resolve_trace_name

EXPECTATIONS_PATH = Path(__file__).with_name("expectations.toml")
EXPECTATIONS = tomllib.loads(EXPECTATIONS_PATH.read_text())
OUTCOMES = ("fires_on", "silent_on", "not_applicable_on")


@dataclass(frozen=True)
class Case:
    query_id: str
    check: str
    trace: str
    outcome: str
    fires_when: str | None
    todo: str | None

    @property
    def id(self) -> str:
        return f"{self.query_id}:{self.check}-{self.outcome.removesuffix('_on')}-{self.trace}"


def _cases() -> list[Case]:
    cases = []
    for query_id, section in EXPECTATIONS.items():
        checks = [("default", section)] + [(k, v) for k, v in section.items() if isinstance(v, dict) and k != "todo"]
        for check, table in checks:
            todo = table.get("todo", {})
            for outcome in OUTCOMES:
                for trace in table.get(outcome, []):
                    cases.append(Case(query_id, check, trace, outcome, table.get("fires_when"), todo.get(trace)))
    return cases


CASES = _cases()


def findings(df: pd.DataFrame, fires_when: str | None) -> int:
    if fires_when is None:
        return len(df)
    column, _, value = fires_when.partition("=")
    if value:
        return int((df[column].astype(str) == value).sum())
    return int(df[column].fillna(0).astype(bool).sum())


def test_every_query_has_expectations():
    missing = sorted(set(load_catalog().ids()) - set(EXPECTATIONS))
    assert missing == [], f"add a section per query to {EXPECTATIONS_PATH.name}"


def test_a_section_has_expectations_or_says_why_not():
    empty = [q for q, section in EXPECTATIONS.items()
             if "pending" not in section and not any(section.get(o) for o in OUTCOMES)
             and not any(isinstance(v, dict) and any(v.get(o) for o in OUTCOMES) for v in section.values())]
    assert empty == []


def test_no_query_is_left_pending():
    """`pending = "reason"` is allowed while a query is written; none may land that way."""
    assert sorted(q for q, s in EXPECTATIONS.items() if "pending" in s) == []


def test_expectations_name_real_queries():
    assert sorted(set(EXPECTATIONS) - set(load_catalog().ids())) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_expectation(loaded, case: Case):
    path = resolve_trace_name(case.trace)
    if not path.exists():
        pytest.skip(f"{case.trace} is not recorded/present ({path})")
    if case.todo:
        pytest.xfail(case.todo)
    run = run_query(loaded(path), case.query_id)
    if case.outcome == "not_applicable_on":
        assert run.not_applicable is not None
        return
    assert run.not_applicable is None, run.not_applicable
    count = findings(run.df, case.fires_when)
    if case.outcome == "fires_on":
        assert count >= 1, f"{case.query_id} stayed silent on {case.trace}"
    else:
        assert count == 0, f"{case.query_id} fired {count} time(s) on {case.trace}"
