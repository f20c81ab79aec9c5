"""One-off, rerunnable migration (issue 14): tests/expectations.toml and tests/test_catalog_units.py into
the rules' own test files (`queries/kineto/<area>/<name>.test.toml`).

- expectations.toml: each `["id"]` section becomes the rule's `[traces]` table, each `["id".sub]` its
  `[traces.sub]`, comments kept (text split, not re-serialised). Sections already present are skipped.
- test_catalog_units.py: every test function runs once with a recording `run_query`; each call becomes a
  `[[case]]` (the built trace's events, the params, the row count, and the columns the test function reads
  pinned to the values that passed its assertions). Cases whose name is already present are skipped.

Rerun after a rebase: `python tools/migrate_layout.py` (add `--delete` to remove the old files). It prints
the case counts before and after.
"""
from __future__ import annotations

import argparse
import inspect
import re
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kineto_sql.catalog import load_catalog  # noqa: E402
from kineto_sql.rule_tests import (OUTCOMES, case_text, load_rule_tests, new_file_header,  # noqa: E402
                                   test_path)

EXPECTATIONS = REPO / "tests" / "expectations.toml"
UNITS = REPO / "tests" / "test_catalog_units.py"
_SECTION = re.compile(r'^\["(?P<id>[a-z_.0-9]+)"(?:\.(?P<sub>[A-Za-z_0-9]+))?\]\s*$')


def _spec_paths() -> dict[str, Path]:
    return {s.id: s.path for s in load_catalog().specs}


def _ensure_file(rule_id: str, sql_path: Path) -> Path:
    path = test_path(sql_path)
    if not path.exists():
        path.write_text(new_file_header(rule_id))
    return path


def expectation_sections(text: str) -> list[tuple[str, str, list[str]]]:
    """(rule id, sub-check or 'default', body lines) per section; a comment block directly above a header
    belongs to that section unless it is a `# ----` group heading (those are file-level)."""
    lines = text.splitlines()
    sections: list[tuple[str, str, list[str]]] = []
    current: list[str] | None = None
    pending: list[str] = []
    for line in lines:
        match = _SECTION.match(line)
        if match:
            if current is not None:
                sections[-1][2].extend(_strip_blank(current))
            sections.append((match["id"], match["sub"] or "default", []))
            current = list(pending)
            pending = []
            continue
        if current is None:
            continue
        if line.startswith("#") and (pending or not current or current[-1].strip() == ""):
            pending.append(line)
            continue
        if line.strip() == "" and pending:
            pending.append(line)
            continue
        current.extend(pending)
        pending = []
        current.append(line)
    if current is not None:
        sections[-1][2].extend(_strip_blank(current))
    return [(rid, sub, [ln for ln in body if not ln.startswith("# ----")]) for rid, sub, body in sections]


def _strip_blank(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def migrate_expectations(paths: dict[str, Path]) -> tuple[int, int]:
    if not EXPECTATIONS.exists():
        return 0, 0
    moved = skipped = 0
    for rule_id, sub, body in expectation_sections(EXPECTATIONS.read_text()):
        if rule_id not in paths:
            print(f"expectations: no rule {rule_id}; section left out", file=sys.stderr)
            continue
        path = _ensure_file(rule_id, paths[rule_id])
        existing = tomllib.loads(path.read_text()).get("traces", {})
        present = ("traces" in tomllib.loads(path.read_text())) if sub == "default" else sub in existing
        if present:
            skipped += 1
            continue
        header = "[traces]" if sub == "default" else f"[traces.{sub}]"
        path.write_text(path.read_text().rstrip("\n") + "\n\n" + header + "\n" + "\n".join(body) + "\n")
        moved += 1
    return moved, skipped


def expectation_count(text: str) -> int:
    data = tomllib.loads(text)
    count = 0
    for section in data.values():
        for table in [section] + [v for k, v in section.items() if isinstance(v, dict) and k != "todo"]:
            count += sum(len(table.get(o, [])) for o in OUTCOMES)
    return count


# ---- test_catalog_units.py ------------------------------------------------------------------------------

_COLUMN_PATTERNS = (r"df\[\[([^\]]*)\]\]", r"\.(\w+)\.(?:tolist|isna|values|all)\b", r"df\.(\w+)\[",
                    r"sorted\(df\.(\w+)\)", r"\bdf\.(\w+)\b")


def _read_columns(source: str) -> set[str]:
    names: set[str] = set()
    for pattern in _COLUMN_PATTERNS:
        for match in re.finditer(pattern, source):
            names.update(re.findall(r"[\"'](\w+)[\"']", match.group(1)) or [match.group(1)])
    return names - {"values", "tolist", "isna", "all", "kind_"} | ({"kind"} if ".kind" in source else set())


def record_units(paths: dict[str, Path]) -> tuple[int, int, int]:
    """Runs every test function of test_catalog_units.py; returns (functions, run calls, cases written)."""
    import pandas as pd

    from kineto_sql import open_trace
    from kineto_sql import runner
    from tests import test_catalog_units as units
    from tests.kineto_builder import to_case

    functions = [(n, f) for n, f in vars(units).items() if n.startswith("test_") and inspect.isfunction(f)]
    calls_total = written = 0
    for name, function in functions:
        calls: list[tuple] = []
        traces: dict[int, object] = {}
        opened = []
        tmp = Path(tempfile.mkdtemp(prefix="migrate_units_"))

        def load_trace(trace, _opened=opened, _traces=traces, _tmp=tmp):
            tp = open_trace(trace.write(_tmp, f"t{len(_opened)}.json.gz"))
            _opened.append(tp)
            _traces[id(tp)] = (trace, [dict(vars(e)) for e in trace.events])
            return tp

        def recording(tp, query_id, params=None, _calls=calls, _traces=traces):
            result = runner.run_query(tp, query_id, params)
            _calls.append((query_id, dict(params or {}), _traces[id(tp)][0], result))
            return result

        units.run_query = recording
        try:
            function(load_trace)
        finally:
            units.run_query = runner.run_query
            for tp in opened:
                tp.close()
        calls_total += len(calls)
        read = _read_columns(inspect.getsource(function) + "".join(
            inspect.getsource(h) for h in _helpers_called(units, function)))
        for index, (query_id, params, trace, result) in enumerate(calls, start=1):
            short = name.removeprefix("test_")
            short = short.removeprefix(query_id.split(".")[1] + "_") or short
            case_name = short + (f"_{index}" if len(calls) > 1 else "")
            path = _ensure_file(query_id, paths[query_id])
            if load_rule_tests(query_id, paths[query_id]).case(case_name):
                continue
            df: pd.DataFrame = result.df
            columns = [c for c in df.columns if c in read] if len(df) else []
            rows = [[_plain(v) for v in row] for row in df[columns].itertuples(index=False)] if columns else []
            text = case_text(case_name, events=to_case(trace), params=params or None,
                             metadata=trace.metadata or None, expect_count=len(df), columns=columns or None,
                             rows=rows, not_applicable=result.not_applicable is not None,
                             note=f"from tests/test_catalog_units.py::{name}")
            body = path.read_text()
            marker = body.find("\n[traces")
            body = (body.rstrip("\n") + "\n\n" + text) if marker < 0 else (
                body[:marker].rstrip("\n") + "\n\n" + text + body[marker:])
            path.write_text(body)
            written += 1
    return len(functions), calls_total, written


def _helpers_called(module, function) -> list:
    source = inspect.getsource(function)
    return [f for n, f in vars(module).items() if inspect.isfunction(f) and not n.startswith("test_")
            and re.search(rf"\b{n}\(", source)]


def _plain(value):
    import math

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NULL"
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return "NULL"
    return value


SNAPSHOTS = REPO / "tests" / "__snapshots__" / "test_query_golden"


def prune_snapshots() -> tuple[int, int]:
    """Deletes snapshot files of a silent or not-applicable result (a header line only, or the
    `not applicable:` sentence): tests/test_query_golden.py keeps files only where a query returns rows."""
    files = sorted(SNAPSHOTS.glob("*.csv"))
    removed = 0
    for path in files:
        lines = path.read_text().splitlines()
        if len(lines) <= 1:
            path.unlink()
            removed += 1
    return len(files), removed


def count_cases(paths: dict[str, Path]) -> tuple[int, int]:
    cases = checks = 0
    for rule_id, sql in paths.items():
        tests = load_rule_tests(rule_id, sql)
        cases += len(tests.cases)
        checks += len(tests.checks)
    return cases, checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delete", action="store_true", help="remove the old files afterwards")
    args = parser.parse_args()
    paths = _spec_paths()
    before_checks = expectation_count(EXPECTATIONS.read_text()) if EXPECTATIONS.exists() else 0
    moved, skipped = migrate_expectations(paths)
    print(f"expectations.toml: {before_checks} trace checks; {moved} sections moved, {skipped} already present")
    if UNITS.exists():
        functions, calls, written = record_units(paths)
        print(f"test_catalog_units.py: {functions} test functions, {calls} run_query calls; {written} cases written")
    before, removed = prune_snapshots()
    print(f"snapshots: {before} files, {removed} empty or not-applicable removed, {before - removed} kept")
    cases, checks = count_cases(paths)
    print(f"rule test files now: {cases} exact-row cases, {checks} trace checks")
    if args.delete:
        for old in (EXPECTATIONS, UNITS, REPO / "tests" / "test_expectations.py"):
            if old.exists():
                old.unlink()
                print(f"removed {old.relative_to(REPO)}")


if __name__ == "__main__":
    main()
