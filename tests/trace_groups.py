"""One xdist work unit per trace: under `-n 2`, every test of one golden or corpus trace (or rank
directory) runs on the same worker, so the trace is loaded, its lib tables built and diagnosed once per
run instead of once on each worker.

A test's trace is read off its parameters (a Path, a rule's TraceCheck, an expert reading's Case); tests
that share a module-scoped fixture (a dask cluster, a browser) stay together in their module's unit. The
tests carry `xdist_group` marks, but pytest >= 9.2 no longer lets pytest-xdist 3.8 append the group to the
nodeid (pytest-dev/pytest-xdist#1386: `--dist loadgroup` then silently groups nothing), so the workers
also write {nodeid: group} to a directory the controller gives them, and `TraceGroupScheduling` (xdist's
loadgroup scheduler) takes each test's work unit from that map.

Kept (rather than pinning pytest < 9.2): a pin would hold every install of the test extra on an old pytest,
while this module only changes how tests are scheduled. Remove when a pytest-xdist release carries
pytest-dev/pytest-xdist#1388 (the fix for #1386): then require that pytest-xdist in pyproject.toml, delete
this module, its test and the three xdist hooks in tests/conftest.py, and keep only the `xdist_group`
marks (`mark_items`). Checked 2026-12-07 against pytest 9.2.0 / pytest-xdist 3.8.0; check again by 2027-06-30.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from xdist.scheduler import LoadGroupScheduling

from kineto_sql.catalog import cases as rule_tests

WORKER_KEY = "kineto_sql_trace_groups"
# `@pytest.mark.reads_trace(path)`: a test whose one golden or corpus trace is no parameter of it
READS_TRACE = "reads_trace"


def trace_group(value, golden_traces: Path, corpus: Path) -> str | None:
    """The group of a test parameter that names a golden or corpus trace: the trace file, or the rank
    directory it lies in (its ranks are diagnosed together). None for any other parameter."""
    if isinstance(value, rule_tests.TraceCheck):
        path = rule_tests.resolve_trace_name(value.trace)
    elif isinstance(value, Path):
        path = value
    elif isinstance(getattr(value, "target", None), Path):  # tests/test_expert_readings.py's Case
        path = value.target
    elif isinstance(value, str) and value and "/" not in value:  # a file name in the corpus or golden traces
        path = next((base / value for base in (golden_traces, corpus) if (base / value).exists()), None)
        if path is None:
            return None
    else:
        return None
    path = path.resolve()
    for prefix, base in (("golden", golden_traces), ("corpus", corpus)):
        if base in path.parents:
            return f"{prefix}/{path.relative_to(base).parts[0]}"
    return None


def shares_module_fixture(item) -> bool:
    """Whether the test uses a fixture its module's other tests share (module/class scope, or session
    scope defined in the module: a dask cluster, a browser): split across workers, each would build it."""
    info = getattr(item, "_fixtureinfo", None)
    module = item.nodeid.split("::")[0]
    for defs in (info.name2fixturedefs.values() if info else ()):
        fixture = defs[-1]
        if fixture.scope in ("class", "module", "package") or (fixture.scope == "session" and fixture.baseid == module):
            return True
    return False


def mark_items(config, items, golden_traces: Path, corpus: Path) -> None:
    """Marks each test that reads exactly one trace (a parameter, or a `reads_trace(path)` mark where the
    trace is no parameter) with its trace's group, else a test that shares a module fixture with its
    module's group; on an xdist worker, also writes the nodeid -> group map for the controller's scheduler."""
    groups = {}
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        named = [m.args[0] for m in item.iter_markers(READS_TRACE)]
        found = {g for g in (trace_group(v, golden_traces, corpus) for v in [*params.values(), *named]) if g}
        group = found.pop() if len(found) == 1 else None
        if group is None and shares_module_fixture(item):
            group = "module " + item.nodeid.split("::")[0]
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            groups[item.nodeid] = group
    directory = getattr(config, "workerinput", {}).get(WORKER_KEY)
    if directory:
        target = Path(directory) / f"{config.workerinput['workerid']}.json"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(groups))
        tmp.replace(target)


def controller_dir(config) -> str:
    """The directory the workers write their maps into (made on the first node, removed at the end)."""
    if not hasattr(config, "_kineto_sql_trace_groups"):
        config._kineto_sql_trace_groups = tempfile.mkdtemp(prefix="kineto-sql-trace-groups-")
    return config._kineto_sql_trace_groups


def remove_dir(config) -> None:
    directory = getattr(config, "_kineto_sql_trace_groups", None)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)


class TraceGroupScheduling(LoadGroupScheduling):
    """xdist's loadgroup scheduling, with the groups from the workers' maps (read once, when the first
    work unit is formed: every worker has finished collecting by then)."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:
            self._groups = {}
            directory = getattr(self.config, "_kineto_sql_trace_groups", None)
            for path in sorted(Path(directory).glob("*.json")) if directory else ():
                self._groups.update(json.loads(path.read_text()))
        group = self._groups.get(nodeid)
        return f"group {group}" if group else super()._split_scope(nodeid)
