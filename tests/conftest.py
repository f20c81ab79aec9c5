"""Shared fixtures: where the shared corpus is, and one loaded engine per trace per test session."""
from __future__ import annotations

from pathlib import Path

import pytest

from kineto_sql import open_trace

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


def corpus_id(path: Path) -> str:
    return str(path.relative_to(CORPUS)) if CORPUS in path.parents else path.name


_LOADED: dict[Path, object] = {}


@pytest.fixture(scope="session")
def loaded():
    """`loaded(path)` opens a trace once per session and returns the same processor afterwards."""
    def get(path):
        path = Path(path).resolve()
        if path not in _LOADED:
            _LOADED[path] = open_trace(path)
        return _LOADED[path]

    yield get
    for tp in _LOADED.values():
        tp.close()
    _LOADED.clear()
