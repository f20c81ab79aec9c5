"""Paste bundles run as plain SQL in a fresh engine with no package registered (as in the Perfetto UI),
twice in a row, and give run_query's rows; and every query works in a fresh session of its own (no
include it forgot to write is satisfied by an earlier query)."""
from __future__ import annotations

import pytest

from kineto_sql import open_trace
from kineto_sql.catalog.spec import load_catalog
from kineto_sql.engine.processor import EngineChoice, KinetoTraceProcessor
from kineto_sql.loading.load import prepare_file
from kineto_sql.devtools.paste import paste_bundle
from kineto_sql.run.runner import run_query
from tests.query_support import GOLDEN_TRACES, canonical_csv
from tests.test_query_units import standard_trace

QUERY_IDS = load_catalog().ids()


@pytest.fixture(scope="module")
def paste_traces(tmp_path_factory):
    """The synthetic trace with every capability, and one small golden trace when recorded."""
    paths = [standard_trace().write(tmp_path_factory.mktemp("paste"), "standard.json.gz")]
    golden = GOLDEN_TRACES / "sync_item_planted.json.gz"
    if golden.exists():
        paths.append(golden)
    return paths


def _bare_session(path):
    """A fresh engine with the trace and nothing of ours: no kineto package, no kineto_metadata."""
    tp = KinetoTraceProcessor(EngineChoice("wasm"))
    tp.load_bytes(prepare_file(path).data)
    return tp


def test_bundle_inlines_lib_modules_in_dependency_order():
    bundle = paste_bundle("reading.step_table")
    assert "INCLUDE PERFETTO MODULE kineto." not in bundle
    assert bundle.index("-- ---- kineto.lib.event_categories ----") < bundle.index("-- ---- kineto.lib.steps ----")
    assert bundle.index("-- ---- kineto.lib.ledger_windows ----") < bundle.index("-- ---- kineto.reading.step_table ----")
    assert bundle.rstrip().endswith("SELECT * FROM kineto_reading_step_table(50.0, 1.5);")
    assert "INCLUDE PERFETTO MODULE intervals.intersect;" in bundle


def test_bundle_takes_params_as_literals():
    assert paste_bundle("reading.op_table", {"top_n": "7"}).rstrip().endswith(
        "SELECT * FROM kineto_reading_op_table(7);")


@pytest.mark.parametrize("query_id", QUERY_IDS)
def test_bundle_runs_twice_in_a_bare_session_and_matches_run_query(loaded, paste_traces, query_id):
    bundle = paste_bundle(query_id)
    for path in paste_traces:
        expected = run_query(loaded(path), query_id)
        tp = _bare_session(path)
        try:
            first = tp.df(bundle)
            second = tp.df(bundle)
        finally:
            tp.close()
        assert canonical_csv(first) == canonical_csv(second)
        if expected.not_applicable is None:
            assert canonical_csv(first) == canonical_csv(expected.df)


@pytest.mark.parametrize("query_id", QUERY_IDS)
def test_query_runs_in_a_fresh_session(loaded, paste_traces, query_id):
    path = paste_traces[0]
    with open_trace(path) as tp:
        fresh = run_query(tp, query_id)
    shared = run_query(loaded(path), query_id)
    assert fresh.not_applicable == shared.not_applicable
    assert canonical_csv(fresh.df) == canonical_csv(shared.df)
