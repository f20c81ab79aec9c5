"""A rule's own tests, run: the `[[case]]`s and `[traces]` checks of its `<name>.test.toml`
(kineto_sql/catalog/cases.py reads them). One implementation for `kineto-sql test` (a user's rule directory)
and tests/test_rules.py (the built-in rules), so both judge a case the same way.

A case passes when the runner answers "not applicable" exactly when the case says so, the row count equals
`expect_count`, and the `columns` of every row equal `rows` (both sorted, compared as canonical text:
floats to 6 significant digits, NULL for missing). A trace check passes when the rule fires (at least one
row, or one where `fires_when` holds), stays silent, or is not applicable, as listed; a check marked `todo`
is a known wrong answer (xfail), one whose trace is absent is skipped.
"""
from __future__ import annotations

import gzip
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from kineto_sql.catalog.cases import RowCase, RuleTests, TraceCheck, count_findings, resolve_trace_name
from kineto_sql.errors import KinetoSqlError

PASSED, FAILED, SKIPPED, XFAIL, XPASS = "passed", "failed", "skipped", "xfail", "xpass"


@dataclass(frozen=True)
class Outcome:
    """One case or check: `kind` is case, traces or file (the test file itself is unreadable)."""

    rule_id: str
    kind: str
    name: str
    outcome: str
    message: str = ""

    @property
    def id(self) -> str:
        return f"{self.rule_id}:{self.name}"

    def to_json(self) -> dict:
        return {"rule_id": self.rule_id, "kind": self.kind, "name": self.name, "outcome": self.outcome,
                "message": self.message}


def canonical_value(value) -> str:
    """A cell as the test files write it: NULL for missing, 1/0 for booleans, floats to 6 significant digits
    (a whole float as an integer)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NULL"
    try:
        import pandas as pd

        if pd.isna(value):
            return "NULL"
    except (TypeError, ValueError):
        pass
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".6g")
    if hasattr(value, "item"):
        return canonical_value(value.item())
    return str(value)


def case_trace(case: RowCase, directory: Path) -> Path:
    """The case's tiny trace, written into `directory`: its `events` built (kineto_builder) or its
    `trace_json` as given."""
    from kineto_sql.devtools.kineto_builder import from_case

    path = Path(directory) / "case.json.gz"
    if case.trace_json is not None:
        with gzip.open(path, "wt") as f:
            f.write(case.trace_json)
        return path
    return from_case(list(case.events), case.metadata).write(Path(directory), path.name)


def case_failure(case: RowCase, run) -> str | None:
    """Why the rule's answer (a QueryRun) does not match the case, in one sentence; None when it does."""
    if case.not_applicable:
        return None if run.not_applicable is not None else (
            f"expected not applicable, got {len(run.df)} row(s)")
    if run.not_applicable is not None:
        return f"expected an answer, got not applicable: {run.not_applicable}"
    if case.expect_count is not None and len(run.df) != case.expect_count:
        return f"expected {case.expect_count} row(s), got {len(run.df)}"
    if case.columns:
        missing = [c for c in case.columns if c not in run.df.columns]
        if missing:
            return f"the rule returns no column(s) {', '.join(missing)}"
        got = sorted([canonical_value(v) for v in row] for row in run.df[list(case.columns)].itertuples(index=False))
        want = sorted([canonical_value(v) for v in row] for row in case.rows)
        if got != want:
            return f"{', '.join(case.columns)}: expected {_rows_text(want)}, got {_rows_text(got)}"
    return None


def check_failure(check: TraceCheck, run) -> str | None:
    """Why the rule's answer on the check's trace is not the outcome listed; None when it is."""
    if check.outcome == "not_applicable_on":
        return None if run.not_applicable is not None else "expected not applicable, the rule answered"
    if run.not_applicable is not None:
        return f"expected an answer, got not applicable: {run.not_applicable}"
    count = count_findings(run.df, check.fires_when)
    if check.outcome == "fires_on":
        return None if count >= 1 else f"stayed silent on {check.trace}"
    return None if count == 0 else f"fired {count} time(s) on {check.trace}"


def run_case(case: RowCase, engine=None, directory: Path | None = None) -> Outcome:
    from kineto_sql.loading.load import open_trace
    from kineto_sql.run.runner import run_query

    with tempfile.TemporaryDirectory(prefix="kineto-sql-case-", dir=directory) as scratch:
        try:
            path = case_trace(case, Path(scratch))
            with (open_trace(path, engine) if engine is not None else open_trace(path)) as tp:
                run = run_query(tp, case.rule_id, case.params)
        except KinetoSqlError as exc:
            return Outcome(case.rule_id, "case", case.name, FAILED, str(exc))
    failure = case_failure(case, run)
    return Outcome(case.rule_id, "case", case.name, FAILED if failure else PASSED, failure or "")


def run_checks(checks: Iterable[TraceCheck], engine=None) -> Iterator[Outcome]:
    """The [traces] checks, each trace loaded once for every check that names it."""
    from kineto_sql.loading.load import open_trace
    from kineto_sql.run.runner import run_query

    by_trace: dict[str, list[TraceCheck]] = {}
    for check in checks:
        by_trace.setdefault(check.trace, []).append(check)
    for trace, named in by_trace.items():
        path = resolve_trace_name(trace)
        if not path.exists():
            for check in named:
                yield Outcome(check.rule_id, "traces", _check_name(check), SKIPPED, f"{trace} is not present ({path})")
            continue
        try:
            tp = open_trace(path, engine) if engine is not None else open_trace(path)
        except KinetoSqlError as exc:
            for check in named:
                yield Outcome(check.rule_id, "traces", _check_name(check), FAILED, str(exc))
            continue
        with tp:
            for check in named:
                try:
                    failure = check_failure(check, run_query(tp, check.rule_id))
                except KinetoSqlError as exc:
                    failure = str(exc)
                if check.todo:
                    yield Outcome(check.rule_id, "traces", _check_name(check), XFAIL if failure else XPASS,
                                  f"known: {check.todo}" if failure else f"marked todo ({check.todo}) but passes")
                else:
                    yield Outcome(check.rule_id, "traces", _check_name(check), FAILED if failure else PASSED,
                                  failure or "")


def run_rule_tests(tests: Iterable[RuleTests], engine=None, traces: bool = True,
                   on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every case (and, with `traces`, every [traces] check) of the rules' test files, in file order; a test
    file that cannot be read, or a rule with nothing to check, is one failed outcome."""
    outcomes: list[Outcome] = []

    def add(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)

    tests = list(tests)
    for t in tests:
        for problem in t.problems:
            add(Outcome(t.rule_id, "file", t.path.name, FAILED, problem))
        if not t.problems and not t.cases and not t.checks:
            add(Outcome(t.rule_id, "file", t.path.name, FAILED, "no [[case]] and no [traces] check: nothing tests "
                        "the rule (`kineto-sql try ID TRACE... --write-cases` adds checks)"))
        for case in t.cases:
            add(run_case(case, engine))
    if traces:
        for outcome in run_checks([c for t in tests for c in t.checks], engine):
            add(outcome)
    return outcomes


def _check_name(check: TraceCheck) -> str:
    return check.id.split(":", 1)[1]


def _rows_text(rows: list[list[str]], limit: int = 5) -> str:
    shown = "; ".join(", ".join(r) for r in rows[:limit]) or "no rows"
    return f"[{shown}{'; ...' if len(rows) > limit else ''}]"
