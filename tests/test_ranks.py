"""`kineto-sql ranks` and `kineto-sql diff`: per-rank tables, the straggler verdict, trace diff."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from kineto_sql.diff import traces as trace_diff
from kineto_sql.cli.main import cli
from kineto_sql.fleet.analysis import fleet_sql, straggler_verdict

SHARED = (Path(__file__).parents[1] / ".." / "shared").resolve()
CORPUS = SHARED / "corpus"
HTA = SHARED / "anchors" / "hta"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")


def _summary(**cols) -> pd.DataFrame:
    cols.setdefault("own_work_us", [None] * len(cols["rank"]))
    cols.setdefault("clock_band_us", [0.0] * len(cols["rank"]))
    return pd.DataFrame(cols)


def _verdict(summary: pd.DataFrame, threshold_pct: float = 10.0):
    """The fleet's distribution and straggler SQL (queries/fleet/) over a hand-made fleet_rank_summary."""
    import duckdb

    con = duckdb.connect()
    con.register("fleet_rank_summary", summary.astype({c: "float64" for c in summary.columns if c != "rank"}))
    con.execute(fleet_sql("distribution"))
    row = con.execute(fleet_sql("straggler"), {"threshold_pct": threshold_pct}).df().iloc[0]
    distribution = con.table("fleet_distribution").df()
    return distribution, straggler_verdict(summary, distribution, row)


def test_verdict_names_the_late_rank_on_synthetic_numbers():
    s = _summary(rank=[0, 1, 2, 3], step_us=[10000.0] * 4, step_start_lag_us=[0.0, 100.0, 50.0, 4000.0],
                 compute_us=[1000.0] * 4, comm_us=[5000.0, 5100.0, 4900.0, 800.0], idle_us=[100.0] * 4,
                 overlap_pct=[1.0] * 4)
    _frame, verdict = _verdict(s)
    assert verdict.straggler == 3
    assert verdict.quantity.column == "comm_us"  # 4.2 ms below the median: 42% of a step
    sentences = [x for x in verdict.narration.split(". ") if x]
    assert len(sentences) >= 5 and "Rank 3 is the straggler" in verdict.narration
    assert "Straggler rank" in verdict.narration


def test_verdict_says_plainly_when_ranks_agree():
    s = _summary(rank=[0, 1, 2], step_us=[10000.0] * 3, step_start_lag_us=[0.0, 20.0, 10.0],
                 compute_us=[1000.0, 1010.0, 990.0], comm_us=[500.0, 505.0, 495.0], idle_us=[10.0] * 3,
                 overlap_pct=[1.0] * 3)
    _frame, verdict = _verdict(s)
    assert verdict.straggler is None
    assert verdict.narration.startswith("No straggler:")


def test_robust_z_falls_back_to_std_when_mad_is_zero():
    s = _summary(rank=[0, 1, 2, 3], step_us=[10000.0] * 4, step_start_lag_us=[0.0] * 4,
                 compute_us=[1.0, 1.0, 1.0, 5.0], comm_us=[1.0] * 4, idle_us=[1.0] * 4, overlap_pct=[1.0] * 4)
    frame, _verdict_ = _verdict(s)
    z = frame.set_index("quantity").loc["compute_us", "worst_z"]
    assert z == pytest.approx(4.0 / pd.Series([1.0, 1.0, 1.0, 5.0]).std(ddof=0))


def test_a_start_lag_inside_the_clock_band_costs_nothing():
    """A 2 ms start lag is 20% of a 10 ms step; with clocks aligned only to 1 ms per rank (band 2 x 1 ms) it
    counts 0 ms beyond the band: no straggler. At a 0.5 ms band it counts 1 ms, 10%: the straggler."""
    base = dict(rank=[0, 1, 2], step_us=[10000.0] * 3, step_start_lag_us=[0.0, 0.0, 2000.0],
                compute_us=[1000.0] * 3, comm_us=[500.0] * 3, idle_us=[10.0] * 3, overlap_pct=[1.0] * 3)
    _f, wide = _verdict(_summary(**base, clock_band_us=[0.0, 1000.0, 1000.0]))
    assert wide.straggler is None and wide.quantity.excess_us == 0.0
    _f, narrow = _verdict(_summary(**base, clock_band_us=[0.0, 500.0, 500.0]))
    assert narrow.straggler == 2 and narrow.quantity.excess_pct_of_step == pytest.approx(10.0)


@needs_corpus
def test_ranks_dlrm_names_rank_7_json():
    result = CliRunner().invoke(cli, ["ranks", str(CORPUS / "dlrm_8rank"), "--jobs", "2", "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)["result"]
    assert out["ranks"] == list(range(8))
    # Rank 7 starts its step 7.5 ms after rank 1 and spends least time in NCCL: the others wait for it.
    assert out["straggler"] == 7
    lag = {r["rank"]: r["step_start_lag_us"] for r in out["summary"]}
    # 7513.0 us on the raw clocks; aligned, rank 7's clock reads 0.5 us behind rank 1's (bands 4.4 / 2.2 us)
    assert lag[1] == 0 and lag[7] == pytest.approx(7513.5)
    clock = {r["rank"]: r for r in out["clock"]}
    assert all(abs(c["offset_us"]) <= c["band_us"] <= 4.45 for c in clock.values() if c["rank"])
    assert len(out["tables"]["temporal"]) == 8
    assert "Rank 7 is the straggler" in out["narration"]


@needs_corpus
def test_ranks_sampled_2rank_names_no_straggler_table():
    result = CliRunner().invoke(cli, ["ranks", str(CORPUS / "hta_sampled_2rank"), "--hta-compat"])
    assert result.exit_code == 0, result.output
    assert "No straggler:" in result.output
    assert "is the straggler" not in result.output
    assert "Temporal breakdown" in result.output and "Distribution across ranks" in result.output


@needs_corpus
def test_ranks_hta_compat_matches_hta_temporal_breakdown():
    result = CliRunner().invoke(cli, ["ranks", str(CORPUS / "hta_sampled_2rank"), "--jobs", "2", "--hta-compat",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    got = pd.DataFrame(json.loads(result.stdout)["result"]["tables"]["temporal"]).set_index("rank")
    want = pd.read_csv(HTA / "sampled_2rank" / "temporal_breakdown.csv").set_index("rank")
    for r in (0, 1):
        assert got.loc[r, "idle_us"] == want.loc[r, "idle_time(us)"]
        assert got.loc[r, "compute_us"] == want.loc[r, "compute_time(us)"]


def test_ranks_on_an_empty_directory_is_one_sentence(tmp_path):
    result = CliRunner().invoke(cli, ["ranks", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.startswith("error:") and "Traceback" not in result.output


def test_diff_summaries_statuses():
    before = pd.DataFrame({"device": ["CPU", "CPU", "GPU"], "name": ["a", "b", "k"], "count": [2, 1, 3],
                           "total_us": [10.0, 5.0, 30.0], "mean_us": [5.0, 5.0, 10.0]})
    after = pd.DataFrame({"device": ["CPU", "GPU", "GPU"], "name": ["a", "k", "k2"], "count": [4, 3, 1],
                          "total_us": [40.0, 30.0, 7.0], "mean_us": [10.0, 10.0, 7.0]})
    d = trace_diff.diff_summaries(before, after).set_index(["device", "name"])
    assert d.loc[("CPU", "a"), "status"] == "increased" and d.loc[("CPU", "a"), "diff_total_us"] == 30.0
    assert d.loc[("CPU", "a"), "diff_mean_us"] == 5.0
    assert d.loc[("CPU", "b"), "status"] == "disappeared"
    assert d.loc[("GPU", "k2"), "status"] == "appeared"
    assert d.loc[("GPU", "k"), "status"] == "unchanged"
    assert trace_diff.status_counts(d.reset_index()) == {
        "appeared": 1, "disappeared": 1, "increased": 1, "decreased": 0, "unchanged": 1}


@needs_corpus
def test_op_summary_matches_hta_control_side_of_compare_traces(loaded):
    # HTA's compare_traces (first iteration) control columns; the test trace of that pair is not in the
    # corpus, so the test side cannot be checked here.
    tp = loaded(CORPUS / "hta_trace_diff_control.json.gz")
    ours = trace_diff.summarise(tp).groupby("name")[["count", "total_us"]].sum()
    for device, fname in (("all", "compare_traces_all_first_iter.csv"), ("gpu", "compare_traces_gpu_first_iter.csv")):
        want = pd.read_csv(HTA / "trace_diff_control_vs_test" / fname)
        want = want[want["control_counts"] > 0]
        sub = ours if device == "all" else trace_diff.summarise(tp).query("device == 'GPU'").set_index("name")
        assert len(want) == len(sub)
        for row in want.to_dict("records"):
            assert sub.loc[row["name"], "count"] == row["control_counts"], row["name"]
            assert abs(sub.loc[row["name"], "total_us"] - row["control_total_duration"]) <= max(
                1.0, 0.01 * row["control_total_duration"]), row["name"]


@needs_corpus
def test_diff_cli_on_the_tiny_compare_pair():
    base, test = CORPUS / "hta_trace_compare_base.json.gz", CORPUS / "hta_trace_compare_test.json.gz"
    result = CliRunner().invoke(cli, ["diff", str(base), str(test), "--all-steps", "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)["result"]
    assert sum(out["status_counts"].values()) == len(out["rows"]) > 0
    same = CliRunner().invoke(cli, ["diff", str(base), str(base), "--all-steps", "--format", "json"])
    counts = json.loads(same.stdout)["result"]["status_counts"]
    assert counts["unchanged"] > 0 and counts["appeared"] == counts["disappeared"] == 0


def test_verdict_names_the_rank_that_works_longest_on_a_cpu_job():
    # two gloo ranks (no GPU quantities): rank 0 works 40 ms a step, rank 1 14 ms (it waits for rank 0):
    # the median is 27 ms, rank 0 13 ms beyond it, 26% of the 50 ms step
    s = _summary(rank=[0, 1], step_us=[50000.0, 50000.0], step_start_lag_us=[0.0, 300.0],
                 compute_us=[None, None], comm_us=[None, None], idle_us=[None, None], overlap_pct=[None, None],
                 own_work_us=[40000.0, 14000.0])
    _frame, verdict = _verdict(s)
    assert verdict.straggler == 0 and verdict.quantity.column == "own_work_us"
    assert verdict.quantity.excess_pct_of_step == pytest.approx(26.0)
    assert "compare rank 0's op table" in verdict.narration


def _shape_balance(rows: list[tuple]) -> pd.DataFrame:
    """fleet.shape_balance over a hand-made op_shapes table of (rank, name, input_dims, calls_per_step)."""
    import duckdb

    con = duckdb.connect()
    con.register("op_shapes", pd.DataFrame(rows, columns=["rank", "name", "input_dims", "calls_per_step"]))
    con.execute(fleet_sql("shape_balance"))
    return con.table("fleet_shape_balance").df().set_index("rank")


def test_same_work_is_the_machine_and_more_work_is_data_imbalance():
    from kineto_sql.fleet.verdict import _cause_text, straggler_cause

    mm, big = "[[256, 384], [384, 384]]", "[[512, 384], [384, 384]]"
    same = _shape_balance([(r, "aten::mm", mm, 3.0) for r in range(4)] + [(r, "aten::tanh", "[[256]]", 3.0)
                                                                          for r in range(4)])
    assert same["work_diff_pct"].tolist() == [0.0] * 4 and not same["work_differs"].any()
    assert straggler_cause(2, same.reset_index()) == "machine"
    # rank 2 runs 6x the matmuls: 15 more calls over the typical 6 per step, 250%
    more = _shape_balance([(r, "aten::mm", mm, 18.0 if r == 2 else 3.0) for r in range(4)]
                          + [(r, "aten::tanh", "[[256]]", 3.0) for r in range(4)])
    assert more.loc[2, "work_diff_pct"] == pytest.approx(250.0) and more.loc[2, "work_differs"]
    assert straggler_cause(2, more.reset_index()) == "data imbalance"
    # over 100% is a share of the typical rank's calls, and said so
    assert "differ in op or input shape from the typical rank's by 250% of that rank's calls" in \
        _cause_text(2, more.reset_index())
    # the same count on larger inputs: a row the others lack (+1) and one it lacks (-1) per step, of 2
    larger = _shape_balance([(r, "aten::mm", big if r == 1 else mm, 1.0) for r in range(3)]
                            + [(r, "aten::add", "[[8]]", 1.0) for r in range(3)])
    assert larger.loc[1, "work_diff_pct"] == pytest.approx(100.0) and larger.loc[0, "work_diff_pct"] == 0.0


@pytest.mark.parametrize(("extra", "differs"), [(0.1, True), (0.099, False)])
def test_work_differs_at_five_percent_and_not_just_under(extra, differs):
    # typical rank: 2 calls per step; 0.1 more is 5.0%, 0.099 is 4.95%
    rows = [(r, "aten::mm", "[[4, 4]]", 2.0) for r in range(3)] + [(3, "aten::mm", "[[4, 4]]", 2.0 + extra)]
    got = _shape_balance(rows)
    assert got.loc[3, "work_diff_pct"] == pytest.approx(100 * extra / 2.0) and bool(got.loc[3, "work_differs"]) is differs


def test_without_record_shapes_the_cause_is_not_claimed():
    from kineto_sql.fleet.verdict import straggler_cause

    got = _shape_balance([(r, "aten::mm", None, 3.0) for r in range(2)]).reset_index()
    assert not got["shapes_recorded"].any() and straggler_cause(0, got) is None


def _moving(own_work: dict[int, list[float]], work_differs: bool = True, step_us: float = 1000.0,
            threshold_pct: float = 10.0):
    """queries/fleet/step_balance.sql and moving_straggler.sql over hand-made per-step own work (rank -> own work
    per step 1, 2, ...), one median step for every rank, and whether the ranks' shapes differ."""
    import duckdb

    con = duckdb.connect()
    rows = [(r, s + 1, step_us, w, 0.0) for r, works in own_work.items() for s, w in enumerate(works)]
    con.register("balance_steps", pd.DataFrame(rows, columns=["rank", "step", "step_us", "own_work_us", "comm_wait_us"]))
    con.register("fleet_rank_summary", pd.DataFrame({"rank": list(own_work), "step_us": [step_us] * len(own_work)}))
    con.register("fleet_shape_balance", pd.DataFrame({"rank": list(own_work), "work_diff_pct": [20.0] * len(own_work),
                                                      "work_differs": [work_differs] * len(own_work)}))
    con.execute(fleet_sql("step_balance"))
    return con.execute(fleet_sql("moving_straggler"), {"threshold_pct": threshold_pct}).df().iloc[0]


def test_imbalance_that_moves_between_ranks_is_named_at_a_tenth_of_a_step():
    # two ranks, 1 ms steps: rank 0 does 800 us in step 1 (rank 1: 600), rank 1 800 in steps 2 and 3 (rank 0
    # 700, 760). Each step's slowest rank sits beyond the median (the mean of two) by 100, 50 and 20 us: a
    # mean of 56.7 us, 5.7% of the step: under 10%, nobody named
    under = _moving({0: [800.0, 700.0, 760.0], 1: [600.0, 800.0, 800.0]})
    assert (under["steps"], under["slowest_ranks"], under["slowest_counts"]) == (3, 2, "rank 1: 2, rank 0: 1")
    assert under["excess_pct_of_step"] == pytest.approx(5.6667, abs=1e-3) and pd.isna(under["straggler"])
    # at the threshold: excess 200, 60, 40 us (mean 100 us, 10.0%): rank 0 costs most (200 of 300 us) though
    # rank 1 is slowest in more steps
    at = _moving({0: [900.0, 700.0, 760.0], 1: [500.0, 820.0, 840.0]})
    assert at["excess_pct_of_step"] == pytest.approx(10.0) and at["straggler"] == 0
    assert (at["excess_sum_us"], at["total_excess_us"]) == (200.0, 300.0)
    just_under = _moving({0: [900.0, 700.0, 760.0], 1: [500.0, 820.0, 839.4]})   # 9.99%
    assert just_under["excess_pct_of_step"] < 10.0 and pd.isna(just_under["straggler"])


def test_no_moving_imbalance_without_moving_or_without_data():
    # the same rank slowest every step is a fixed straggler (fleet.straggler's), not a moving imbalance
    fixed = _moving({0: [900.0, 900.0, 900.0], 1: [500.0, 500.0, 500.0]})
    assert fixed["slowest_ranks"] == 1 and fixed["excess_pct_of_step"] == pytest.approx(20.0)
    assert pd.isna(fixed["straggler"])
    # ranks that trade the slowest place on the same input shapes: machine noise, not data imbalance
    noise = _moving({0: [900.0, 700.0, 760.0], 1: [500.0, 820.0, 840.0]}, work_differs=False)
    assert noise["excess_pct_of_step"] == pytest.approx(10.0) and pd.isna(noise["straggler"])
    # a step only one rank holds as steady (its cold window on the other) is not compared
    partial = _moving({0: [900.0, 700.0, 760.0], 1: [500.0, 820.0]})
    assert partial["steps"] == 2


@pytest.mark.parametrize("variant,straggler,moving", [("planted", 0, True), ("fixed", None, False)])
def test_varlen_ranks_name_the_imbalance_that_moves(variant, straggler, moving):
    # varlen_gloo_planted: rank 0 works 781 / 537 / 193 / 956 ms in steps 2-5, rank 1 191 / 766 / 306 / 1003:
    # the slowest rank moves (rank 1 in 3 steps, rank 0 in 1) and each step costs the other half the gap,
    # 122.3 ms on average, 14.5% of the 845.7 ms median step; rank 0's one step costs 294.7 ms of the 489.2.
    # The fixed twin's ranks run the same sequence lengths: whatever the gaps, no data imbalance
    from kineto_sql.fleet.run import diagnose_directory

    d = diagnose_directory(Path(__file__).parents[1] / "golden" / "traces" / f"varlen_gloo_{variant}")
    summary = d.ranks_summary
    assert summary["straggler"] == straggler and summary["moving"] is moving
    if moving:
        assert summary["excess_pct_of_step"] == 14.46 and summary["cause"] == "data imbalance"
        assert "slowest in 4 steps: rank 1: 3, rank 0: 1" in summary["narration"]
        assert "Rank 0 costs the others most: 294.72 ms in the 1 step(s) it is the slowest, 60%" in summary["narration"]
        exposed = next(f for f in d.traces[1].findings if f.query_id == "catalog.exposed_communication")
        assert exposed.cross_rank_note.endswith("part of this wait is for each step's slowest rank.")
