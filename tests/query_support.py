"""Shared helpers of the query tests: trace sets, builder-trace loading, canonical CSV snapshots."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from kineto_sql import open_trace
from kineto_sql.catalog import cases as rule_tests
from kineto_sql.devtools.rule_tests import canonical_value
from tests.conftest import CORPUS, GOLDEN

GOLDEN_TRACES = GOLDEN / "traces"
# Public traces of different formats the query tests also run on (loaded once per session, ~6 s in all):
# 2021 tb_plugin categories, ROCm MI300 with stacks and RCCL, GPU-only MI210, CPU-only rank with gloo.
CORPUS_SELECTION = (
    "kineto_tbp_resnet50_nw0_run1623143089861.pt.trace.json.gz",
    "tl_mi300_resnet_act_checkpoint.json.gz",
    "tl_mi210_gpu_only_trace.json.gz",
    "hta_cpu_only_rank34_full.pt.trace.json.gz",
)


def golden_trace_paths() -> list[Path]:
    """Every golden trace present now (a colleague records them; the set may grow)."""
    return sorted(GOLDEN_TRACES.glob("*.json.gz")) if GOLDEN_TRACES.is_dir() else []


def trace_name(path: Path) -> str:
    """`golden:<stem>` or `corpus:<stem>`: how the rules' test files name traces."""
    return rule_tests.trace_name(path) or ("corpus:" + path.name.removesuffix(".gz").removesuffix(".json"))


def resolve_trace_name(name: str) -> Path:
    return rule_tests.resolve_trace_name(name)


def corpus_selection() -> list[Path]:
    return [CORPUS / name for name in CORPUS_SELECTION if (CORPUS / name).exists()]


@pytest.fixture
def load_trace(tmp_path):
    """`load_trace(KinetoTrace)` writes the builder trace and opens it in a fresh engine (closed after)."""
    opened = []

    def load(trace):
        path = trace.write(tmp_path, f"t{len(opened)}.json.gz")
        tp = open_trace(path)
        opened.append(tp)
        return tp

    yield load
    for tp in opened:
        tp.close()


MAX_SNAPSHOT_ROWS = 200


def canonical_csv(df: pd.DataFrame, max_rows: int | None = None) -> str:
    """Header line, then rows as text (floats %.6g, NULL for missing), sorted: stable across runs.

    With `max_rows`, a longer result keeps its first `max_rows` sorted rows and ends with one line giving
    the row count and the sha256 of all rows, so a snapshot stays reviewable and still pins everything.
    """
    header = ",".join(df.columns)
    rows = sorted(",".join(_csv_cell(canonical_value(v)) for v in row) for row in df.itertuples(index=False))
    if max_rows is not None and len(rows) > max_rows:
        digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        rows = rows[:max_rows] + [f"# ... {len(rows)} rows in all; sha256 of all rows {digest}"]
    return "\n".join([header, *rows]) + "\n"


def _csv_cell(text: str) -> str:
    if any(ch in text for ch in ',"\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


class CanonicalCsvExtension(SingleFileSnapshotExtension):
    """One .csv file per snapshot, holding canonical_csv() text."""

    file_extension = "csv"
    _write_mode = WriteMode.TEXT

    def serialize(self, data, **kwargs) -> str:
        return data if isinstance(data, str) else canonical_csv(data)


@pytest.fixture
def snapshot_csv(snapshot):
    return snapshot.use_extension(CanonicalCsvExtension)
