"""Shared fixtures: where the shared corpus is, one loaded engine and one diagnosis per trace per test
session, and one xdist group per trace (so that under `-n 2 --dist loadgroup` each trace is loaded and
diagnosed on one worker only, instead of on both)."""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pytest

from kineto_sql import open_trace
from tests import trace_groups

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
CORPUS = SHARED / "corpus"
ANCHORS = SHARED / "anchors"
GOLDEN = REPO / "golden"

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")


def corpus_traces() -> list[Path]:
    """Every public trace file of ../shared/corpus (40 files; rank directories included file by file)."""
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*.json*") if p.is_file())


def real_traces(*corpus_names: str, start: int = 0) -> list[Path]:
    """Every fourth golden trace (from `start`) and the named corpus traces: the real input each compiled
    loader pass is held to its Python loop on (tests/test_*_compiled.py)."""
    return sorted((GOLDEN / "traces").glob("*.json.gz"))[start::4] + [CORPUS / name for name in corpus_names]


def arguments_of(monkeypatch, step: str, path: Path, keep=lambda *args: args) -> tuple:
    """What prepare hands its step `step` (a function prepare.py calls by that name) while it prepares the
    trace at `path`: keep(*arguments), taken at the call (copy there what the step changes). Skips the test
    when the trace is not here."""
    from kineto_sql.loading import prepare

    if not path.exists():
        pytest.skip(f"{path} is not here (the shared corpus)")
    seen = []
    real = getattr(prepare, step)

    def spy(*args, **options):  # (keep sees the positional arguments only)
        seen.append(keep(*args))
        return real(*args, **options)

    monkeypatch.setattr(prepare, step, spy)
    prepare.prepare_path(path)
    monkeypatch.setattr(prepare, step, real)
    (arguments,) = seen
    return arguments


def corpus_id(path: Path) -> str:
    return str(path.relative_to(CORPUS)) if CORPUS in path.parents else path.name


_LOADED: OrderedDict[Path, object] = OrderedDict()
# Loaded engines kept open at once. The tests of one trace run together (one xdist work unit per trace,
# tests/trace_groups.py), so a few dozen suffice; each open engine holds its trace and every table built on it
# (100-300 MB for a golden trace once diagnosed), and keeping all of a worker's ~60 traces open took a
# worker past 12 GB.
OPEN_ENGINES = 24


@pytest.fixture(scope="session")
def loaded():
    """`loaded(path)` opens a trace once and returns the same processor while it is among the
    OPEN_ENGINES most recently used; an older one is closed and opened again when asked for."""
    def get(path):
        path = Path(path).resolve()
        if path in _LOADED:
            _LOADED.move_to_end(path)
        else:
            _LOADED[path] = open_trace(path)
            while len(_LOADED) > OPEN_ENGINES:
                _LOADED.popitem(last=False)[1].close()
        return _LOADED[path]

    yield get
    for tp in _LOADED.values():
        tp.close()
    _LOADED.clear()


_DIAGNOSED: dict[Path, object] = {}


@pytest.fixture(scope="session")
def diagnosed(loaded):
    """`diagnosed(path)`: a trace file's TraceDiagnosis (diagnose_trace on the session's engine), or a rank
    directory's Diagnosis (kineto_sql.fleet.run.diagnose_directory); computed once per session, shared by every test file."""
    from kineto_sql.diagnose.run import diagnose_trace
    from kineto_sql.fleet.run import diagnose_directory

    def get(path):
        path = Path(path).resolve()
        if path not in _DIAGNOSED:
            _DIAGNOSED[path] = diagnose_directory(path) if path.is_dir() else diagnose_trace(loaded(path))
        return _DIAGNOSED[path]

    yield get
    _DIAGNOSED.clear()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    trace_groups.mark_items(config, items, GOLDEN / "traces", CORPUS)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist controller: tell each worker where to write its test -> trace group map."""
    node.workerinput[trace_groups.WORKER_KEY] = trace_groups.controller_dir(node.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") == "loadgroup":  # pyproject's addopts; `--dist load` turns it off
        return trace_groups.TraceGroupScheduling(config, log)
    return None


def pytest_unconfigure(config):
    trace_groups.remove_dir(config)


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """Tables follow COLUMNS when it is set (cli.output.console); pytest-xdist's workers inherit one from the
    terminal that started the run, so every test starts without it and sets its own where it matters."""
    monkeypatch.delenv("COLUMNS", raising=False)
