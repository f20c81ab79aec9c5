"""Every large bucket has a finding: each steady step-ledger bucket that holds 5% or more of the steady step
time is claimed, at least in part, by some finding (the specific detectors first, then the default
explainers: catalog.unexplained_time for idle buckets and host waits, catalog.device_composition for busy
ones, catalog.host_composition for a CPU-only capture's own work), so
the cause the verdict's sentence names always has a finding. Checked on the golden set and on every trace of
the public corpus (diagnoses cached per session by tests/conftest.py)."""
from __future__ import annotations

import pytest

from kineto_sql.run.runner import run_query
from tests.conftest import corpus_id, corpus_traces, needs_corpus
from tests.query_support import golden_trace_paths

SHARE_PCT = 5.0


def unclaimed_buckets(tp, diagnosis) -> dict[str, float]:
    """Steady buckets of at least SHARE_PCT of the steady lane time that no finding claims any of."""
    ledger = run_query(tp, "reading.step_ledger").df
    steady = ledger[~ledger["is_cold"].astype(bool)]
    total = float(steady["dur"].sum())
    if total <= 0:
        return {}
    shares = (100.0 * steady.groupby("bucket")["dur"].sum() / total).to_dict()
    claimed = {bucket for f in diagnosis.findings for bucket, ns in f.claimed.items() if ns > 0}
    return {b: round(p, 2) for b, p in shares.items() if p >= SHARE_PCT and b not in claimed}


@pytest.mark.parametrize("path", golden_trace_paths(), ids=lambda p: p.name)
def test_every_large_bucket_is_claimed_on_golden(path, loaded, diagnosed):
    assert unclaimed_buckets(loaded(path), diagnosed(path)) == {}


@needs_corpus
@pytest.mark.parametrize("path", corpus_traces(), ids=corpus_id)
def test_every_large_bucket_is_claimed_on_the_corpus(path, loaded, diagnosed):
    assert unclaimed_buckets(loaded(path), diagnosed(path)) == {}
