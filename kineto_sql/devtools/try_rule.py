"""`kineto-sql try ID TRACE_OR_DIR...`: one rule over many traces, one outcome per trace.

Outcome per trace: fires (N findings; the top row shown), silent, not applicable (the trace lacks what the
rule needs), or error (the trace could not be read). `write_cases` turns the outcomes on golden and corpus
traces into `[traces]` checks of the rule's test file.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from kineto_sql.catalog.spec import QuerySpec
from kineto_sql.errors import KinetoSqlError
from kineto_sql.catalog.cases import add_trace_checks, count_findings, test_path, trace_name

TRACE_SUFFIXES = (".json", ".json.gz")


@dataclass(frozen=True)
class TryResult:
    path: Path
    outcome: str  # fires | silent | not applicable | error
    count: int
    top: str
    name: str | None

    @property
    def outcome_key(self) -> str | None:
        return {"fires": "fires_on", "silent": "silent_on", "not applicable": "not_applicable_on"}.get(self.outcome)


def trace_paths(targets: list[Path]) -> list[Path]:
    """The files given, and every .json / .json.gz under the directories given, sorted."""
    out: list[Path] = []
    for target in targets:
        target = Path(target)
        if target.is_dir():
            out += sorted(p for p in target.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
        elif target.exists():
            out.append(target)
        else:
            raise KinetoSqlError(f"{target}: no such file or directory")
    if not out:
        raise KinetoSqlError("no trace files (.json, .json.gz) found in " + ", ".join(str(t) for t in targets))
    return out


def top_row(df, fires_when: str | None) -> str:
    """The finding with the largest impact (or the first row), in a few words."""
    if fires_when:
        column, _, value = fires_when.partition("=")
        df = df[df[column].astype(str) == value] if value else df[df[column].fillna(0).astype(bool)]
    if df.empty:
        return ""
    if "impact_dur" in df.columns:
        df = df.sort_values("impact_dur", ascending=False, kind="stable")
    row = df.iloc[0]
    if "evidence" in df.columns and isinstance(row["evidence"], str):
        return row["evidence"]
    return ", ".join(f"{c}={row[c]}" for c in list(df.columns)[:6])


def try_rule(spec: QuerySpec, paths: list[Path], params: Mapping[str, object] | None = None,
             fires_when: str | None = None, engine=None) -> Iterator[TryResult]:
    from kineto_sql.loading.load import open_trace
    from kineto_sql.run.runner import run_query

    for path in paths:
        name = trace_name(path)
        try:
            tp = open_trace(path, engine) if engine is not None else open_trace(path)
        except KinetoSqlError as exc:
            yield TryResult(path, "error", 0, str(exc), name)
            continue
        try:
            run = run_query(tp, spec, params)
        finally:
            tp.close()
        if run.not_applicable:
            yield TryResult(path, "not applicable", 0, run.not_applicable, name)
            continue
        count = count_findings(run.df, fires_when)
        yield TryResult(path, "fires" if count else "silent", count, top_row(run.df, fires_when) if count else "",
                        name)


def write_cases(spec: QuerySpec, results: list[TryResult], check: str = "default",
                fires_when: str | None = None) -> tuple[list[str], list[str], list[Path]]:
    """Appends the outcomes to the rule's test file. Returns (added, conflicts, traces without a name)."""
    outcomes: dict[str, list[str]] = {}
    unnamed = []
    for r in results:
        if r.outcome_key is None:
            continue
        if r.name is None:
            unnamed.append(r.path)
            continue
        outcomes.setdefault(r.outcome_key, []).append(r.name)
    added, conflicts = add_trace_checks(test_path(spec.path), check, outcomes, fires_when)
    return added, conflicts, unnamed
