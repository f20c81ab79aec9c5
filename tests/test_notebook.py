"""The notebook API, as the README's example uses it: load, query, run, diagnose, several ranks."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import kineto_sql as ks
from kineto_sql.api.notebook import Ranks

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "traces"
TRACE = GOLDEN / "gc_stall_planted.json.gz"
RANKS = GOLDEN / "ddp_allreduce_planted"


@pytest.fixture(scope="module")
def trace():
    with ks.load(TRACE) as t:
        yield t


def test_query_gives_numeric_dtypes(trace):
    df = trace.query("SELECT name, ts, dur, depth, parent_id FROM slice ORDER BY dur DESC LIMIT 50")
    assert len(df) == 50
    assert df["ts"].dtype == "int64" and df["dur"].dtype == "int64" and df["depth"].dtype == "int64"
    assert df["parent_id"].dtype == "float64" and df["parent_id"].isna().any()  # NULL for top-level slices
    assert pd.api.types.is_string_dtype(df["name"])
    assert df["dur"].is_monotonic_decreasing


def test_run_takes_parameters_as_keywords(trace):
    ops = trace.run("reading.op_table", top_n=3)
    assert len(ops) == 3 and ops["calls"].dtype == "int64" and ops["self_cpu_dur"].dtype == "int64"
    assert ops.loc[0, "name"] == "Python GC"  # the planted fault: the GC pause dominates self CPU time
    steps = trace.run("reading.step_table")
    assert list(steps["step"]) == [4, 5, 6]


def test_run_not_applicable_is_an_empty_frame_that_says_why(trace):
    with pytest.warns(UserWarning, match="not applicable: catalog.straggler_rank needs"):
        df = trace.run("catalog.straggler_rank")
    assert df.empty and "needs" in df.attrs["not_applicable"]


def test_diagnose_finds_the_planted_gc_stall(trace):
    report = trace.diagnose()
    df = report.to_pandas()
    assert df.loc[0, "query_id"] == "catalog.gc_gil_stall"
    assert df["impact_ns"].dtype == "int64" and df.loc[0, "impact_ns"] == df["impact_ns"].max() > 0
    assert "catalog.gc_gil_stall" in str(report)
    page = report._repr_html_()
    assert "<table" in page and "gc_gil_stall" in page


def test_ranks_read_every_rank_as_one_frame():
    ranks = ks.load(RANKS)
    assert isinstance(ranks, Ranks) and len(ranks.files) == 2
    df = ranks.query("SELECT count(*) AS slices FROM slice")
    assert list(df.columns) == ["rank", "slices"] and sorted(df["rank"]) == [0, 1]
    assert df["slices"].dtype == "int64" and (df["slices"] > 100).all()


def test_a_directory_without_traces_is_one_sentence(tmp_path):
    with pytest.raises(ks.errors.TraceInputError, match="holds no trace files"):
        ks.load(tmp_path)
