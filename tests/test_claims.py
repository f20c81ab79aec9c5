"""Findings claim step-ledger time (kineto_sql/diagnose/claims.py): no two findings claim the same
nanosecond (per window: the claims in a window's bucket add up to at most the bucket, and all claims in a
window to at most its time x lanes), the steady findings' shares add up to at most 100% of the steady step
time, and a rule that claims a bucket alone gets exactly what the ledger holds in the windows it fired on."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pandas as pd
import pytest

from kineto_sql.diagnose.claims import COLD, resolve_claims, resolve_window_claims
from kineto_sql.run.runner import run_query
from tests.conftest import corpus_id, corpus_traces, needs_corpus
from tests.query_support import golden_trace_paths


@dataclass(frozen=True)
class _Spec:
    id: str
    claims: tuple[str, ...]


def test_resolve_claims_never_overdraws_a_bucket():
    pools = {"idle.sync": 100, "idle.launch": 50, "host.ops": 0, COLD: 40}
    got = resolve_claims([(_Spec("a", ("idle.sync",)), 70), (_Spec("b", ("idle.sync", "idle.launch")), 90),
                          (_Spec("c", ()), 500), (_Spec("d", (COLD,)), 60),
                          (_Spec("e", ("rest of idle.launch",)), 30)], pools)
    # b (the largest specific estimate) takes the 90 it wants from idle.sync; a gets the 10 left; e (a `rest
    # of` claim, after the specific ones) takes 30 of idle.launch; c (no claims line, last) takes the 20 left
    # of the steady buckets; d gets all 40 of the cold pool, less than it estimated
    assert got == {"b": {"idle.sync": 90}, "a": {"idle.sync": 10}, "e": {"idle.launch": 30},
                   "c": {"idle.launch": 20}, "d": {COLD: 40}}


def test_a_row_that_names_its_bucket_never_takes_kernel_time_another_finding_claimed():
    """kernel_mix claims all of step 1's attention (softmax) time; op_far_from_peak's softmax row names
    busy.attention, so it gets what is left of it (nothing), not GEMM time it did not measure."""
    pools = {(1, "busy.attention"): 60, (1, "busy.gemm"): 100, (2, "busy.attention"): 10}
    got = resolve_window_claims([
        (_Spec("kernel_mix", ("busy.attention", "busy.gemm")), {(1, "busy.attention"): 65}),
        (_Spec("op_far_from_peak", ("busy.gemm", "busy.attention")), {(None, "busy.attention"): 46}),
    ], pools)
    # kernel_mix takes its 60 ns in step 1 and (a step whose window cannot hold it all) 5 more elsewhere;
    # op_far_from_peak gets the 5 ns of attention left, never busy.gemm
    assert got == {"kernel_mix": {(1, "busy.attention"): 60, (2, "busy.attention"): 5},
                   "op_far_from_peak": {(2, "busy.attention"): 5}}


def test_claims_are_resolved_per_window():
    """A finding's row for step 2 draws from step 2's window only, while its step has room."""
    pools = {(1, "idle.sync"): 30, (2, "idle.sync"): 30}
    got = resolve_window_claims([(_Spec("a", ("idle.sync",)), {(2, None): 20}),
                                 (_Spec("b", ("idle.sync",)), {(2, None): 15, (1, None): 5})], pools)
    assert got == {"a": {(2, "idle.sync"): 20}, "b": {(2, "idle.sync"): 10, (1, "idle.sync"): 10}}


def _check(tp, diagnosis, label):
    assert diagnosis.errors == (), f"{label}: {diagnosis.errors}"
    ledger = run_query(tp, "reading.step_ledger").df
    steady = ledger[~ledger["is_cold"].astype(bool)]
    pools = steady.groupby("bucket")["dur"].sum().to_dict()
    pools[COLD] = int(ledger[ledger["is_cold"].astype(bool)]["dur"].sum())
    taken = defaultdict(int)
    for f in diagnosis.findings:
        assert f.impact_ns == sum(f.claimed.values()), f"{label}: {f.query_id} impact is not its claims"
        for bucket, ns in f.claimed.items():
            taken[bucket] += ns
    for bucket, ns in taken.items():
        assert ns <= pools.get(bucket, 0), f"{label}: {bucket} claimed {ns} ns of {pools.get(bucket, 0)}"
    # per window: no (step, bucket) claimed beyond what the ledger holds, no window beyond its time x lanes
    held = ledger.assign(step=ledger["step"].astype("Int64"))
    by_key = defaultdict(int)
    for row in held.itertuples(index=False):
        step = None if row.step is pd.NA else int(row.step)
        by_key[(step, COLD if bool(row.is_cold) else row.bucket)] += int(row.dur)
    window_time = defaultdict(int)
    for (step, _), ns in by_key.items():
        window_time[step] += ns
    per_key, per_window = defaultdict(int), defaultdict(int)
    for f in diagnosis.findings:
        assert sum(ns for _, _, ns in f.claimed_windows) == f.impact_ns, f"{label}: {f.query_id}"
        for step, bucket, ns in f.claimed_windows:
            per_key[(step, bucket)] += ns
            per_window[step] += ns
    for key, ns in per_key.items():
        assert ns <= by_key.get(key, 0), f"{label}: {key} claimed {ns} ns of {by_key.get(key, 0)}"
    for step, ns in per_window.items():
        assert ns <= window_time[step], f"{label}: step {step} claimed {ns} ns of {window_time[step]}"
    steady_findings = [f for f in diagnosis.findings if f.scope == "steady"]
    steady_share = sum(f.impact_pct or 0 for f in steady_findings)
    # each impact_pct is rounded to 2 decimals: the sum may exceed 100 by half a hundredth per finding
    assert steady_share <= 100.0 + 0.005 * len(steady_findings) + 1e-6, f"{label}: steady shares add up to {steady_share}%"
    # a fix removes at most the time its finding claims: a replayed saving never exceeds the claim per step
    for f in diagnosis.findings:
        p = f.prediction
        if p and p["claimed_per_step_ns"] is not None:
            assert 0 <= p["claimed_per_step_ns"] <= f.impact_ns, label
            assert p["saving_range_ns"][0] <= p["saving_ns"] <= p["claimed_per_step_ns"], (label, f.query_id)
    # a bucket with one claimant: the ledger-exact rules claim exactly the ledger's time in their windows
    for f in diagnosis.findings:
        if f.query_id == "catalog.sync_forcing_op" and f.claimed:
            fired = set(f.where.steps)
            held = steady[steady["bucket"].isin(["idle.sync", "host.sync_read"]) & steady["step"].isin(fired)]
            assert f.impact_ns == int(held["dur"].sum()), label


@pytest.mark.parametrize("path", golden_trace_paths(), ids=lambda p: p.name)
def test_claims_never_overlap_on_golden(path, loaded, diagnosed):
    _check(loaded(path), diagnosed(path), path.name)


@needs_corpus
@pytest.mark.parametrize("path", corpus_traces(), ids=corpus_id)
def test_claims_never_overlap_on_the_corpus(path, loaded, diagnosed):
    _check(loaded(path), diagnosed(path), corpus_id(path))
