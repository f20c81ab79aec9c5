"""A rewritten trace is written in time order (loading/time_order.py): the ph M events first, then the rest
by the engine's nanosecond timestamp, equal ones in file order. The engine builds the same tables from it
as from the same events in file order, only faster; these tests hold both halves of that claim."""
from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql import EngineChoice, KinetoTraceProcessor
from kineto_sql.loading import prepare as prepare_module
from kineto_sql.loading.events import ns
from kineto_sql.loading.load import open_prepared
from kineto_sql.loading.prepare import prepare, prepare_path
from kineto_sql.loading.time_order import time_order
from tests.conftest import CORPUS, GOLDEN, needs_corpus
from tests.kineto_builder import Kernel, KinetoTrace, Launch, ProfilerStep

# Every table the loader's conservation contract speaks of. stack_id / parent_stack_id are left out: they
# hash interned string ids, which follow the order the importer first meets each name.
TABLES = {
    "slice": "SELECT * EXCLUDE_STACK FROM slice ORDER BY id",
    "thread": "SELECT * FROM thread ORDER BY utid",
    "process": "SELECT * FROM process ORDER BY upid",
    "flow": "SELECT * FROM flow ORDER BY id",
    "args": "SELECT * FROM args ORDER BY id",
    "counter": "SELECT * FROM counter ORDER BY id",
    "track": "SELECT * FROM track ORDER BY id",
    "instant": "SELECT * FROM instant ORDER BY ts",
}


ALL = ("M", "X", "i", "C", "f")


def test_by_time_equal_times_in_file_order_metadata_without_a_time_at_zero():
    events = [{"ph": "X", "ts": 5}, {"ph": "M"}, {"ph": "C", "ts": 1}, {"ph": "X", "ts": 5},
              {"ph": "i", "ts": 2.0004}, {"ph": "M", "ts": 3}, {"ph": "f", "ts": "1"}, {"ph": "C", "ts": -1}]
    # the scan read the X / i / f times (None for the rest); one event appended after it (a lane's name)
    ts_ns = [5000, None, None, 5000, 2000, None, 1000, None]
    assert time_order(events, ts_ns, ALL).tolist() == [7, 1, 2, 6, 4, 5, 0, 3]
    assert time_order(events + [{"ph": "M"}], ts_ns, ALL).tolist() == [7, 1, 8, 2, 6, 4, 5, 0, 3]


def test_events_in_order_or_with_a_time_or_phase_it_cannot_order_are_left_as_they_are():
    assert time_order([{"ph": "M"}, {"ph": "X", "ts": 1}, {"ph": "C", "ts": 1}], [None, 1000, None], ALL) is None
    assert time_order([{"ph": "X", "ts": 2}, {"ph": "C", "ts": "soon"}], [2000, None], ALL) is None
    assert time_order([{"ph": "X", "ts": 2}, {"ph": "M", "ts": [1]}], [2000, None], ALL) is None
    assert time_order([{"ph": "X", "ts": 2}, {"ph": "M", "ts": 9223372036854728}], [2000, None], ALL) is None
    assert time_order([{"ph": "X", "ts": 2}, {"ph": "B", "ts": 1}], [2000, None], ("X", "B")) is None


def _written(prepared) -> list[dict]:
    return orjson.loads(prepared.data)["traceEvents"]


def _assert_in_time_order(written: list[dict]) -> None:
    times = [ns(e["ts"]) if "ts" in e else 0 for e in written]
    assert times == sorted(times)


def _flow_end_first() -> bytes:
    """A launch's flow start and its end at one instant (the kernel starts as the launch does), the end
    written first: the importer would drop the end (flow_end_without_start), so the loader moves it to the
    end of the file (flows.bind_flows)."""
    doc = KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=200), Launch(correlation=1, ts_us=20, dur_us=8),
                       Kernel(correlation=1, ts_us=20, dur_us=30)]).to_json()
    events = doc["traceEvents"]
    start = next(e for e in events if e.get("ph") == "s")
    end = next(e for e in events if e.get("ph") == "f")
    assert end["ts"] == start["ts"]
    events.remove(end)
    events.insert(events.index(start), end)
    return json.dumps(doc).encode()


def test_a_flow_end_moved_after_its_start_stays_after_it():
    prepared = prepare(_flow_end_first(), Path("t.json"))
    assert prepared.report.fix_count("flow_end_reordered") == 1
    written = _written(prepared)
    _assert_in_time_order(written)
    phases = [e["ph"] for e in written if e["ph"] in ("s", "f")]
    assert phases == ["s", "f"]
    with open_prepared(prepare(_flow_end_first(), Path("t.json")), Path("t.json")) as tp:
        assert int(tp.df("SELECT count(*) AS n FROM flow").n[0]) == 1


def _tables(prepared, path: Path) -> dict:
    with open_prepared(prepared, path) as tp:
        out = {}
        for table, sql in TABLES.items():
            if table == "slice":
                columns = [c for c in tp.df("SELECT * FROM slice LIMIT 0").columns
                           if c not in ("stack_id", "parent_stack_id")]
                sql = sql.replace("* EXCLUDE_STACK", ", ".join(columns))
            out[table] = tp.df(sql).to_dict("records")
        return out


def _sibling_at_the_launch() -> bytes:
    """test_flow_risk's trace whose flow is rebound explicitly (the flow events dropped, the list rewritten)."""
    doc = KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=1000), Launch(correlation=1, ts_us=20, dur_us=8),
                       Launch(correlation=2, ts_us=40, dur_us=8), Kernel(correlation=1, ts_us=50, dur_us=30),
                       Kernel(correlation=2, ts_us=90, dur_us=30)]).to_json()
    launch = next(e for e in doc["traceEvents"] if e.get("name") == "cudaLaunchKernel" and e["ts"] == 40)
    doc["traceEvents"].append({**launch, "name": "cudaFuncSetAttribute", "dur": 2, "args": {"cbid": 9}})
    return json.dumps(doc).encode()


BUILT = {"flow end written first": _flow_end_first, "flow rebound explicitly": _sibling_at_the_launch}
# Small traces with every kind of rewrite between them: remapped ids, tid 0 split off, overlap lanes, flows
# that follow a lane, the rebase. (The whole corpus and golden set were checked the same way; see the note
# in time_order.py.)
FILES = [GOLDEN / "traces" / "compile_eager_island_planted.json.gz", GOLDEN / "traces" / "checkpoint_planted.json.gz",
         CORPUS / "hta_critical_path_alexnet.json.gz", CORPUS / "tl_sglang_qwen3_8b_decode.json.gz",
         CORPUS / "tl_h100_bert_small.json.gz"]


def _both_orders(monkeypatch, prepare_it):
    """The trace prepared as shipped (time order) and with time_order switched off (file order)."""
    in_time_order = prepare_it()
    monkeypatch.setattr(prepare_module, "time_order", lambda events, ts_ns, phases: None)
    in_file_order = prepare_it()
    monkeypatch.undo()
    return in_time_order, in_file_order


@pytest.mark.parametrize("built", sorted(BUILT))
def test_the_engine_builds_the_same_tables_from_a_built_trace_in_time_order(monkeypatch, built):
    raw = BUILT[built]()
    in_time_order, in_file_order = _both_orders(monkeypatch, lambda: prepare(raw, Path("t.json")))
    _assert_in_time_order(_written(in_time_order))
    assert _tables(in_time_order, Path("t.json")) == _tables(in_file_order, Path("t.json"))


@needs_corpus
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_engine_builds_the_same_tables_from_a_file_in_time_order(monkeypatch, path):
    in_time_order, in_file_order = _both_orders(monkeypatch, lambda: prepare_path(path))
    assert in_time_order.report.rewritten
    written = _written(in_time_order)
    _assert_in_time_order(written)
    assert written != _written(in_file_order)
    assert sorted(map(orjson.dumps, written)) == sorted(map(orjson.dumps, _written(in_file_order)))
    assert _tables(in_time_order, path) == _tables(in_file_order, path)


_TIMES = st.sampled_from([0, 5, 10, 10.0004, 20])  # few values: many ties, one that is 10 us once in ns
_THREAD = st.fixed_dictionaries({"pid": st.sampled_from([1, 2]), "tid": st.sampled_from([11, 22, 33])})
_EVENT = st.one_of(
    st.builds(lambda t, ts, dur, n: {"ph": "X", "name": f"x{n}", **t, "ts": ts, "dur": dur},
              _THREAD, _TIMES, st.sampled_from([0, 1, 3, 10]), st.integers(0, 3)),
    st.builds(lambda t, ts, ph: {"ph": ph, "name": "b", **t, "ts": ts}, _THREAD, _TIMES, st.sampled_from(["B", "E"])),
    st.builds(lambda t, ts, s: {"ph": "i", "s": s, "name": "i", **t, "ts": ts}, _THREAD, _TIMES,
              st.sampled_from(["t", "p", "g"])),
    st.builds(lambda t, ts, v: {"ph": "C", "name": "c", **t, "ts": ts, "args": {"v": v}}, _THREAD, _TIMES,
              st.integers(0, 9)),
    st.builds(lambda t, ts, ph, i: {"ph": ph, "id": i, "cat": "ac2g", "name": "f", "bp": "e", **t, "ts": ts},
              _THREAD, _TIMES, st.sampled_from(["s", "f"]), st.integers(1, 2)),
    st.builds(lambda t, name, n, ts: {"ph": "M", "name": name, **t, "args": {"name": f"n{n}", "sort_index": n},
                                      **({} if ts is None else {"ts": ts})},
              _THREAD, st.sampled_from(["thread_name", "process_name", "thread_sort_index"]), st.integers(0, 3),
              st.one_of(st.none(), _TIMES)),
)


def _engine_tables(events: list[dict]) -> list:
    with KinetoTraceProcessor(EngineChoice("wasm")) as tp:
        tp.load_bytes(orjson.dumps({"traceEvents": events}))
        return [tp.df(sql).to_dict("records") for sql in (
            "SELECT utid, tid, name, upid FROM thread ORDER BY utid", "SELECT upid, pid, name FROM process ORDER BY upid",
            "SELECT id, ts, dur, name, track_id, depth, parent_id, arg_set_id FROM slice ORDER BY id",
            "SELECT id, name, type FROM track ORDER BY id", "SELECT slice_out, slice_in FROM flow ORDER BY id",
            "SELECT ts, track_id, value FROM counter ORDER BY id",
            "SELECT name, value FROM stats WHERE value != 0 AND name NOT LIKE '%duration_ns'")]


@settings(max_examples=30, deadline=None)
@given(st.lists(_EVENT, min_size=1, max_size=12))
def test_the_importer_reads_any_events_in_time_order_as_in_file_order(events):
    """What time_order relies on, asked of the engine itself, on events no loader fix has touched: sorted
    stably by time (metadata without a time at 0), they give the same threads, processes, slices (ids,
    depths, parents), tracks, flows, counters and stats as in the file's order, with ties and metadata
    times anywhere. (B / E events are generated too: time_order leaves those traces as they are; 2 x 300
    examples passed when written.)"""
    order = time_order(events, [None] * len(events), {e["ph"] for e in events})
    written = events if order is None else [events[i] for i in order.tolist()]
    assert _engine_tables(written) == _engine_tables(events)
