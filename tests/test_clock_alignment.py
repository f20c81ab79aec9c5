"""Clocks across ranks: each rank's offset from the ends of matched collectives (queries/fleet/clock_offsets.sql),
checked on the corpus rank sets with every rank's clock moved by a known amount.

dlrm_8rank (one host, 8 ranks, every collective matched): the offsets move by exactly the shift, what is left
(the ranks' true disagreement, ~1 us) is inside the reported band, and every reading on the aligned clocks
(straggler, lags, collective skew, lateness) is the same before and after. hta_sampled_2rank (a sampled capture):
the calls do not match across ranks, so nothing is aligned or skewed, before or after; the straggler reading
(none) stays. Cost: 8 + 2 ranks, each loaded twice (hta and collectives parts)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from kineto_sql.fleet.executors import LocalExecutor
from kineto_sql.fleet.replicate import shifted
from kineto_sql.fleet.run import run_fleet
from kineto_sql.loading.source import trace_files_in
from tests.conftest import CORPUS, needs_corpus

# tens of us to a few ms, both ways; rank 0 moves too (the offsets are against the lowest rank)
DLRM_SHIFT_US = {0: 40, 1: -25, 2: 850, 3: 0, 4: -2300, 5: 4100, 6: 65, 7: -3700}
SAMPLED_SHIFT_US = {0: 0, 1: 2750}


def _shifted_copy(rank_dir: Path, shifts: dict[int, int], out: Path) -> Path:
    out.mkdir()
    for f in trace_files_in(rank_dir):
        trace = json.loads(gzip.decompress(f.path.read_bytes()))
        rank = trace["distributedInfo"]["rank"]
        world = trace["distributedInfo"]["world_size"]
        (out / f.path.name).write_bytes(gzip.compress(json.dumps(shifted(trace, rank, world, shifts[rank])).encode()))
    return out


def _read(rank_dir: Path):
    return run_fleet(rank_dir, ("hta", "collectives"), LocalExecutor(2)).report


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory):
    if not (CORPUS / "dlrm_8rank").is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    moved = _shifted_copy(CORPUS / "dlrm_8rank", DLRM_SHIFT_US, tmp_path_factory.mktemp("dlrm") / "ranks")
    return _read(CORPUS / "dlrm_8rank"), _read(moved)


@needs_corpus
def test_dlrm_offsets_recovered_within_the_band(dlrm):
    before, after = dlrm
    b, a = before.clock.set_index("rank"), after.clock.set_index("rank")
    assert (a["status"].iloc[1:] == "aligned on 8 call(s)").all() and a.loc[0, "status"] == "reference clock"
    for rank, shift in DLRM_SHIFT_US.items():
        moved = shift - DLRM_SHIFT_US[0]
        # the estimate moves by exactly the shift (a median of whole-ns differences, floored) ...
        assert a.loc[rank, "offset_us"] == pytest.approx(b.loc[rank, "offset_us"] + moved, abs=1e-9)
        # ... and recovers it within the band it reports (one host: the true offsets are ~0)
        assert abs(a.loc[rank, "offset_us"] - moved) <= a.loc[rank, "band_us"] <= 4.45
        assert a.loc[rank, "band_us"] == b.loc[rank, "band_us"]


@needs_corpus
def test_dlrm_readings_are_the_same_after_the_shift(dlrm):
    before, after = dlrm
    assert before.verdict.straggler == after.verdict.straggler == 7
    assert before.verdict.narration == after.verdict.narration
    # (start times near 1.7e15 us carry 0.25 us of float precision)
    lag_b = before.summary.set_index("rank")["step_start_lag_us"]
    lag_a = after.summary.set_index("rank")["step_start_lag_us"]
    assert lag_a.tolist() == pytest.approx(lag_b.tolist(), abs=0.5)
    pd.testing.assert_frame_equal(before.collective_skew, after.collective_skew)
    pd.testing.assert_frame_equal(before.rank_lateness, after.rank_lateness)
    # without alignment the shift would have moved the first all_to_all's start skew by up to 7.8 ms
    assert before.collective_skew["start_skew_us"].iloc[0] == pytest.approx(7624.5)


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    if not (CORPUS / "hta_sampled_2rank").is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    moved = _shifted_copy(CORPUS / "hta_sampled_2rank", SAMPLED_SHIFT_US, tmp_path_factory.mktemp("s") / "ranks")
    return _read(CORPUS / "hta_sampled_2rank"), _read(moved)


@needs_corpus
def test_sampled_calls_are_named_not_skewed_before_and_after(sampled):
    for report in sampled:
        clock = report.clock.set_index("rank")
        assert (clock["applied_offset_ns"] == 0).all() and not clock["calls_match"].any()
        assert clock.loc[1, "status"] == (
            "not aligned: 2 matched call(s) are not one call on every rank (message sizes differ across ranks); "
            "the ends of the matched calls disagree by more than the calls last; a sampled or partial capture?")
        # the estimate would be 140 ms wide: wider than the calls' median duration, so nothing is claimed
        assert clock.loc[1, "band_us"] > 100_000
        skew = report.collective_skew
        assert len(skew) == 10 and skew["start_skew_us"].isna().all() and not skew["skewed"].any()
        assert report.rank_lateness.empty
        assert report.verdict.straggler is None and report.verdict.narration.startswith("No straggler:")
    before, after = sampled
    assert before.verdict.narration == after.verdict.narration
    # the estimate itself still follows the shift exactly
    assert after.clock.offset_us[1] - before.clock.offset_us[1] == pytest.approx(2750.0)
