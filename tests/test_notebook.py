"""The notebook API, as the README's example uses it: load, query, run, diagnose, several ranks."""
from __future__ import annotations

import textwrap
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


def test_diagnose_costs_each_finding_per_step_as_the_text_report_does(trace):
    """to_pandas and the Jupyter table give the cost per step (the text report's words), not the sum over
    the steps; the planted GC stall is the top finding."""
    from kineto_sql.diagnose.narrate import cost

    report = trace.diagnose()
    df = report.to_pandas()
    top = report.findings[0]
    assert df.loc[0, "query_id"] == top.query_id == "catalog.gc_gil_stall"
    assert df["impact_ns"].dtype == "int64" and df.loc[0, "impact_ns"] == df["impact_ns"].max() > 0
    # three steady windows (the first is not cold: nothing in it is one-time work): the stall's cost per step is
    # a third of its total, and that is the number shown
    assert report.diagnosis.traces[0].verdict.steps == 3
    assert df.loc[0, "per_step_ns"] == top.per_step_ns == top.impact_ns // 3 == 136_756_729
    assert df.loc[0, "cost"] == cost(top) and df.loc[0, "cost"].startswith("136.8 ms per step (88.0% of the steady")
    text = str(report)
    assert "catalog.gc_gil_stall" in text and "136.8 ms per step" in text and "410.3 ms per step" not in text
    page = report._repr_html_()
    assert "<table" in page and "gc_gil_stall" in page and "136.8 ms per step" in page
    assert "410270188" not in page and "host-bound: host-bound" not in page


def test_the_readme_example_runs_as_written(monkeypatch):
    """The README's notebook block, executed as it stands (from the checkout's root), then its results'
    dtypes: what a pandas user gets."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    block = readme.split("- From a notebook", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(root)
    names: dict = {}
    exec(textwrap.dedent(block), names)
    top, ops, findings = names["top"], names["ops"], names["findings"]
    assert list(top.columns) == ["name", "dur"] and len(top) == 5
    assert top["dur"].dtype == "int64" and pd.api.types.is_string_dtype(top["name"])
    assert top["dur"].is_monotonic_decreasing
    assert len(ops) == 10 and ops.loc[0, "name"] == "Python GC"
    numeric = {c: str(ops[c].dtype) for c in ops.columns if c not in ("name", "kind")}
    assert numeric == {"calls": "int64", "self_cpu_dur": "int64", "self_cpu_pct": "float64", "cpu_dur": "int64",
                       "self_device_dur": "int64", "self_device_pct": "float64", "device_dur": "int64",
                       "avg_cpu_dur": "int64"}
    assert ops["self_device_pct"].isna().all()           # a CPU trace: declared DOUBLE, every cell NULL
    assert list(findings.columns[:9]) == ["rank", "query_id", "title", "severity", "per_step_ns", "impact_pct",
                                          "scope", "cost", "impact_ns"]
    assert findings.loc[0, "query_id"] == "catalog.gc_gil_stall"
    assert findings["impact_pct"].dtype == "float64" and findings["count"].dtype == "int64"
    # closed: the engine is gone, and a later query says so in one sentence
    with pytest.raises(ks.errors.EngineError, match="it was closed"):
        names["t"].query("SELECT 1")


def test_ranks_read_every_rank_as_one_frame():
    ranks = ks.load(RANKS)
    assert isinstance(ranks, Ranks) and len(ranks.files) == 2
    df = ranks.query("SELECT count(*) AS slices FROM slice")
    assert list(df.columns) == ["rank", "slices"] and sorted(df["rank"]) == [0, 1]
    assert df["slices"].dtype == "int64" and (df["slices"] > 100).all()


def test_ranks_diagnose_gives_each_rank_its_rows_and_the_cross_rank_note():
    """A planted straggler (rank 0 works 40.3 ms a step, rank 1 14.1 ms and waits): every rank's findings,
    costed per step, and rank 1's wait carries the cross-rank reading's note as its own field (set by
    kineto_sql/fleet/run.py), first in its narration's "why", while its evidence stays the rule's."""
    report = ks.load(RANKS).diagnose()
    assert report.diagnosis.ranks_summary["straggler"] == 0
    df = report.to_pandas()
    assert df["rank"].dtype == "int64" and sorted(set(df["rank"])) == [0, 1]
    assert df["per_step_ns"].dtype == "int64"
    host = df[df["query_id"] == "catalog.host_composition"].set_index("rank")["per_step_ns"]
    assert host.to_dict() == {0: 40_268_291, 1: 14_102_555}
    noted = df[df["cross_rank_note"].notna()]
    assert sorted(zip(noted["rank"], noted["query_id"])) == [(1, "catalog.exposed_communication"),
                                                            (1, "catalog.straggler_rank")]
    wait = next(f for t in report.diagnosis.traces if t.rank == 1 for f in t.findings
                if f.query_id == "catalog.exposed_communication")
    assert wait.cross_rank_note.endswith("part of this wait is for rank 0.")
    assert not any(e.startswith("The cross-rank reading") for e in wait.evidence)
    assert wait.narration.split("Why we think so: ")[1].startswith(wait.cross_rank_note)


def test_a_directory_without_traces_is_one_sentence(tmp_path):
    with pytest.raises(ks.errors.TraceInputError, match="holds no trace files"):
        ks.load(tmp_path)
