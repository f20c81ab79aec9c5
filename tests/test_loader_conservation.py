"""The loader's contract on every public trace: every event in, every slice and flow out, exactly.

The expectations are computed here from the original file with plain JSON reading (timestamps parsed as
Decimal, so no float rounding hides a nanosecond), independently of the loader's own code.
"""
from __future__ import annotations

import gzip
import json
from collections import Counter
from decimal import Decimal

import pytest

from tests.conftest import corpus_id, corpus_traces, needs_corpus

TRACES = corpus_traces()
ARG_SAMPLE_MODULO = 37  # args are compared on every slice whose id % 37 == 0 (all slices of small traces)


def _original_events(path):
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _ns(value) -> int:
    return int((Decimal(str(value)) * 1000).to_integral_value())


def _flatten(prefix, value, out):
    """Perfetto's arg flattening: dicts by '.', lists by [i], JSON null stores nothing."""
    if value is None:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flatten(f"{prefix}[{i}]", v, out)
    else:
        out[prefix] = value


@pytest.fixture(scope="module", params=TRACES, ids=[corpus_id(p) for p in TRACES])
def case(request, loaded):
    path = request.param
    return path, _original_events(path), loaded(path)


@needs_corpus
def test_every_x_and_instant_event_is_one_slice_with_exact_name_category_and_times(case):
    path, events, tp = case
    offset = tp.report.ts_offset_ns
    expected = Counter(
        (e.get("name"), e.get("cat"), _ns(e["ts"]), _ns(e.get("dur", 0)) if e["ph"] == "X" else 0)
        for e in events if isinstance(e, dict) and e.get("ph") in ("X", "i", "I"))
    rows = tp.df("SELECT name, category, ts, dur FROM slice")
    actual = Counter(
        (r.name, None if r.category is None or r.category != r.category else r.category, int(r.ts) + offset, int(r.dur))
        for r in rows.itertuples())
    assert sum(actual.values()) == sum(expected.values())
    assert actual == expected


@needs_corpus
def test_args_survive_exactly(case):
    path, events, tp = case
    offset = tp.report.ts_offset_ns
    by_key = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") in ("X", "i", "I"):
            by_key.setdefault((e.get("name"), _ns(e["ts"]), _ns(e.get("dur", 0)) if e["ph"] == "X" else 0), []).append(e)
    sample = tp.df("SELECT id, name, ts, dur, arg_set_id FROM slice WHERE id % 37 = 0 OR (SELECT count(*) FROM slice) < 3000")
    args = tp.df("SELECT a.arg_set_id, a.key, a.int_value, a.string_value, a.real_value, a.value_type FROM args a "
                 "JOIN slice s ON s.arg_set_id = a.arg_set_id "
                 "WHERE (s.id % 37 = 0 OR (SELECT count(*) FROM slice) < 3000) AND a.key GLOB 'args.*'")
    stored = {}
    for r in args.itertuples():
        value = r.string_value if r.value_type == "string" else (r.real_value if r.value_type == "real" else r.int_value)
        stored.setdefault(r.arg_set_id, {})[r.key] = value
    checked = 0
    for s in sample.itertuples():
        candidates = by_key.get((s.name, int(s.ts) + offset, int(s.dur)), [])
        want_options = []
        for e in candidates:
            flat = {}
            _flatten("args", e.get("args") or {}, flat)
            want_options.append(flat)
        have = stored.get(s.arg_set_id, {}) if s.arg_set_id == s.arg_set_id and s.arg_set_id is not None else {}
        assert any(_same_args(want, have) for want in want_options), (s.name, have, want_options[:1])
        checked += 1
    assert checked == len(sample)


def _same_args(want: dict, have: dict) -> bool:
    if set(want) != set(have):
        return False
    for key, value in want.items():
        got = have[key]
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, Decimal) or isinstance(value, float):
            if abs(float(value) - float(got)) > 1e-9 * max(1.0, abs(float(value))):
                return False
        elif isinstance(value, int):
            if not -2**63 <= value < 2**63:  # beyond int64: the loader stores the exact decimal text
                if str(got) != str(value):
                    return False
            elif int(got) != value:
                return False
        elif str(got) != str(value):
            return False
    return True


@needs_corpus
def test_every_cpu_to_gpu_flow_joins_the_runtime_call_to_its_own_kernel(case):
    path, events, tp = case
    flows = tp.df("""
        SELECT
          extract_arg(a.arg_set_id, 'args.correlation') AS out_corr,
          extract_arg(b.arg_set_id, 'args.correlation') AS in_corr
        FROM flow f JOIN slice a ON a.id = f.slice_out JOIN slice b ON b.id = f.slice_in""")
    both = flows.dropna()
    assert (both.out_corr == both.in_corr).all(), both[both.out_corr != both.in_corr].head()
    # Every s/f pair of the file whose two ends carry the same correlation is one flow row.
    starts = Counter((repr(e.get("id")), e.get("cat"), e.get("name")) for e in events
                     if isinstance(e, dict) and e.get("ph") == "s")
    ends = {(repr(e.get("id")), e.get("cat"), e.get("name")) for e in events if isinstance(e, dict) and e.get("ph") == "f"}
    paired = sum(1 for key, n in starts.items() if n == 1 and key in ends)
    assert len(flows) >= paired


@needs_corpus
def test_engine_reports_no_data_loss(case):
    path, events, tp = case
    loss = tp.df("SELECT name, value FROM stats WHERE value > 0 AND severity IN ('error', 'data_loss')")
    assert loss.empty, loss.to_dict(orient="records")


@needs_corpus
def test_top_level_kineto_fields_are_queryable(case):
    path, events, tp = case
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, parse_float=Decimal)
    keys = set(tp.df("SELECT key FROM kineto_metadata").key)
    if isinstance(doc, dict):
        assert set(doc) - {"traceEvents"} <= keys
    assert {"kineto_sql.source", "kineto_sql.ts_offset_ns"} <= keys
