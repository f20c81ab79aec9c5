"""Findings claim step-ledger time (kineto_sql/diagnose/run.py resolve_claims): no two findings claim the
same nanosecond, the steady findings' shares add up to at most 100% of the steady step time, and a rule
that claims a bucket alone gets exactly what the ledger holds in the windows it fired on."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pytest

from kineto_sql.diagnose.run import COLD, resolve_claims
from kineto_sql.runner import run_query
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
    steady_findings = [f for f in diagnosis.findings if f.scope == "steady"]
    steady_share = sum(f.impact_pct or 0 for f in steady_findings)
    # each impact_pct is rounded to 2 decimals: the sum may exceed 100 by half a hundredth per finding
    assert steady_share <= 100.0 + 0.005 * len(steady_findings) + 1e-6, f"{label}: steady shares add up to {steady_share}%"
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
