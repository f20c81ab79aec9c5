"""A rule's own test file: `queries/kineto/<area>/<name>.test.toml`, beside `<name>.sql`.

Two parts (queries/README.md, "Tests of a rule"):

- `[[case]]` tables: exact-row cases on a tiny trace, built from `events` (kineto_sql/devtools/kineto_builder.py classes,
  one inline table each, `type = "CpuOp"` ...; `repeat = N` with `every_us = D` lays N copies D us apart
  and replaces `{i}` in their strings by 0..N-1) or given verbatim as `trace_json`. `params` overrides
  defaults; `expect_count` is the number of rows; `columns` + `rows` pin those columns of every row
  (compared sorted, floats to 6 significant digits, "NULL" for missing); `not_applicable = true` says the
  runner must answer "not applicable".
- `[traces]` (and `[traces.NAME]` sub-checks): `fires_on` / `silent_on` / `not_applicable_on` lists of
  `golden:<stem>` / `corpus:<stem>` traces, optional `fires_when` ("column" or "column=value": only rows
  where it holds count), `todo = { trace = "reason" }` for a known wrong answer (xfail).

This module only reads and writes the files; kineto_sql/devtools/rule_tests.py runs them (for `kineto-sql
test` and tests/test_rules.py alike).
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from kineto_sql.errors import QueryError

SUFFIX = ".test.toml"
OUTCOMES = ("fires_on", "silent_on", "not_applicable_on")
CASE_KEYS = {"name", "params", "events", "trace_json", "metadata", "expect_count", "columns", "rows",
             "not_applicable", "note"}
TRACE_KEYS = set(OUTCOMES) | {"fires_when", "todo"}


@dataclass(frozen=True)
class RowCase:
    """One exact-row case of a rule."""

    rule_id: str
    name: str
    params: dict
    events: tuple[dict, ...]
    trace_json: str | None
    metadata: dict
    expect_count: int | None
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    not_applicable: bool

    @property
    def fires(self) -> bool:
        return not self.not_applicable and (self.expect_count or len(self.rows)) > 0


@dataclass(frozen=True)
class TraceCheck:
    """One outcome of a rule on one golden or corpus trace."""

    rule_id: str
    check: str
    trace: str
    outcome: str
    fires_when: str | None
    todo: str | None

    @property
    def id(self) -> str:
        return f"{self.rule_id}:{self.check}-{self.outcome.removesuffix('_on')}-{self.trace}"


@dataclass(frozen=True)
class RuleTests:
    rule_id: str
    path: Path
    cases: tuple[RowCase, ...] = ()
    checks: tuple[TraceCheck, ...] = ()
    problems: tuple[str, ...] = field(default=())
    raw_cases: tuple[dict, ...] = field(default=(), compare=False, repr=False)

    def firing_cases(self) -> list[RowCase]:
        return [c for c in self.cases if c.fires]

    def case(self, name: str) -> RowCase | None:
        return next((c for c in self.cases if c.name == name), None)


def test_path(sql_path: Path) -> Path:
    """queries/kineto/catalog/gc_gil_stall.sql -> queries/kineto/catalog/gc_gil_stall.test.toml"""
    return Path(sql_path).with_name(Path(sql_path).stem + SUFFIX)


def load_rule_tests(rule_id: str, sql_path: Path) -> RuleTests:
    """The rule's test file, parsed; a missing or malformed file gives `problems`, never an exception."""
    path = test_path(sql_path)
    if not path.exists():
        return RuleTests(rule_id, path, problems=(f"no test file {path.name} beside the rule; "
                                                  "`kineto-sql new` writes one, `kineto-sql try --write-cases` fills it",))
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        return RuleTests(rule_id, path, problems=(f"{path.name} is not valid TOML: {exc}",))
    problems: list[str] = []
    cases = []
    for number, raw in enumerate(data.get("case", []), start=1):
        unknown = set(raw) - CASE_KEYS
        if unknown:
            problems.append(f"case {number}: unknown key(s) {', '.join(sorted(unknown))}")
        name = raw.get("name")
        if not name:
            problems.append(f"case {number} has no name")
            continue
        if any(c.name == name for c in cases):
            problems.append(f"case name {name!r} appears twice")
        if "events" not in raw and "trace_json" not in raw:
            problems.append(f"case {name}: give `events` or `trace_json`")
        columns = tuple(raw.get("columns", ()))
        rows = tuple(tuple(r) for r in raw.get("rows", ()))
        if any(len(r) != len(columns) for r in rows):
            problems.append(f"case {name}: every row needs one value per column ({len(columns)})")
        if not raw.get("not_applicable") and "expect_count" not in raw and not rows:
            problems.append(f"case {name}: say what it expects (expect_count, rows or not_applicable)")
        cases.append(RowCase(rule_id, name, dict(raw.get("params", {})), tuple(raw.get("events", ())),
                             raw.get("trace_json"), dict(raw.get("metadata", {})), raw.get("expect_count"),
                             columns, rows, bool(raw.get("not_applicable", False))))
    checks = []
    traces = data.get("traces", {})
    for check, table in [("default", traces)] + [(k, v) for k, v in traces.items()
                                                  if isinstance(v, dict) and k != "todo"]:
        unknown = {k for k, v in table.items() if not isinstance(v, dict) or k == "todo"} - TRACE_KEYS
        if unknown:
            problems.append(f"[traces{'' if check == 'default' else '.' + check}]: unknown key(s) "
                            f"{', '.join(sorted(unknown))}")
        todo = table.get("todo", {})
        for outcome in OUTCOMES:
            for trace in table.get(outcome, []):
                checks.append(TraceCheck(rule_id, check, trace, outcome, table.get("fires_when"), todo.get(trace)))
    unknown_top = set(data) - {"case", "traces"}
    if unknown_top:
        problems.append(f"unknown top-level key(s) {', '.join(sorted(unknown_top))}; use [[case]] and [traces]")
    return RuleTests(rule_id, path, tuple(cases), tuple(checks), tuple(problems), tuple(data.get("case", [])))


def count_findings(df, fires_when: str | None) -> int:
    """Rows that count as findings: all of them, or those where `fires_when` holds."""
    if fires_when is None:
        return len(df)
    column, _, value = fires_when.partition("=")
    if column not in df.columns:
        raise QueryError(f"fires_when names column {column!r}, which the rule does not return")
    if value:
        return int((df[column].astype(str) == value).sum())
    return int(df[column].fillna(0).astype(bool).sum())


# ---- writing -------------------------------------------------------------------------------------------

def toml_value(value) -> str:
    """A TOML literal for the few shapes test files hold (numbers, strings, bools, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return '"NULL"'
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if value is None:
        return '"NULL"'
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if hasattr(value, "item"):
        return toml_value(value.item())
    return _toml_string(str(value))


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else _toml_string(key)


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


# ---- trace names: golden:<stem> and corpus:<stem> -----------------------------------------------------

def repo_root() -> Path:
    """The source checkout the package runs from (an editable install): queries/ sits in it (the built-in
    queries/, also while --rules combines rule directories with it in a temporary tree)."""
    from kineto_sql.catalog.user_rules import builtin_root

    return builtin_root().parent


def golden_dir() -> Path:
    return repo_root() / "golden" / "traces"


def corpus_dir() -> Path:
    return (repo_root() / ".." / "shared" / "corpus").resolve()


def _stem(rel: Path) -> str:
    text = rel.as_posix()
    for suffix in (".gz", ".json", ".pt.trace"):
        text = text.removesuffix(suffix)
    return text


def trace_name(path: Path) -> str | None:
    """`golden:<stem>` / `corpus:<stem>` for a trace under golden/traces or the shared corpus, else None."""
    path = Path(path).resolve()
    for prefix, base in (("golden", golden_dir().resolve()), ("corpus", corpus_dir())):
        if base in path.parents:
            return f"{prefix}:{_stem(path.relative_to(base))}"
    return None


def resolve_trace_name(name: str) -> Path:
    kind, _, stem = name.partition(":")
    if kind == "golden":
        return golden_dir() / f"{stem}.json.gz"
    if kind == "corpus":
        for candidate in (corpus_dir() / f"{stem}.json.gz", corpus_dir() / f"{stem}.pt.trace.json.gz",
                          corpus_dir() / f"{stem}.json"):
            if candidate.exists():
                return candidate
        return corpus_dir() / f"{stem}.json.gz"
    raise ValueError(f"trace name {name!r} must start with golden: or corpus:")


def add_trace_checks(path: Path, check: str, outcomes: dict[str, list[str]], fires_when: str | None = None
                     ) -> tuple[list[str], list[str]]:
    """Adds traces to the `[traces]` (or `[traces.CHECK]`) table of a test file, keeping its comments.
    Returns (added, conflicts): a trace already listed under another outcome is a conflict, not written."""
    text = path.read_text() if path.exists() else ""
    header = "[traces]" if check == "default" else f"[traces.{check}]"
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        block_lines: list[str] = []
        end = len(lines)
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
        block_lines = lines[start + 1:end]
    existing = tomllib.loads("\n".join(line for line in block_lines)) if block_lines else {}
    if existing.get("fires_when") not in (None, fires_when):
        raise QueryError(f"{header} of {path.name} counts rows where {existing['fires_when']!r}; "
                         f"use another --check name for {fires_when!r}")
    listed = {t: o for o in OUTCOMES for t in existing.get(o, [])}
    added, conflicts = [], []
    merged = {o: list(existing.get(o, [])) for o in OUTCOMES}
    for outcome, traces in outcomes.items():
        for trace in traces:
            if trace in listed:
                if listed[trace] != outcome:
                    conflicts.append(f"{trace}: listed as {listed[trace]}, now {outcome}")
                continue
            merged[outcome].append(trace)
            listed[trace] = outcome
            added.append(f"{outcome.removesuffix('_on')} {trace}")
    if not added:
        return added, conflicts
    comments = [line for line in block_lines if line.startswith("#")]
    others = {k: v for k, v in existing.items() if k not in OUTCOMES and k != "fires_when"}
    block = [header, *comments]
    if fires_when or existing.get("fires_when"):
        block.append(f"fires_when = {toml_value(fires_when or existing['fires_when'])}")
    for key, value in others.items():
        block.append(f"{key} = {toml_value(value)}")
    for outcome in OUTCOMES:
        if merged[outcome]:
            block += _list_lines(outcome, merged[outcome])
    if start is None:
        new = text.rstrip("\n") + ("\n\n" if text.strip() else "") + "\n".join(block) + "\n"
    else:
        new = "\n".join(lines[:start] + block + [""] * (end < len(lines)) + lines[end:]).rstrip("\n") + "\n"
    path.write_text(new)
    return added, conflicts


def _list_lines(key: str, items: list[str], width: int = 110) -> list[str]:
    head = f"{key} = ["
    lines, current = [], head
    for k, item in enumerate(items):
        piece = toml_value(item) + ("," if k < len(items) - 1 else "]")
        if len(current) + len(piece) + 1 > width and current != head:
            lines.append(current.rstrip())
            current = " " * len(head)
        current += piece + " "
    lines.append(current.rstrip())
    return lines
