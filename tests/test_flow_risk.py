"""The loader examines only the flow events the importer could bind wrongly (flows._intended_and_at_risk).

(a) where no flow is at risk, skipping the others changes nothing: the same bytes reach the engine as
    when every flow goes through the full binding check, and the engine holds the same flows and slices;
(b) where one is at risk, it is found and fixed: the arrow the bare engine would draw to the wrong
    slice joins the launch to its kernel;
(c) placing a flow by the slice that begins where it sits reads the same intended slices and flows at
    risk as looking every flow up in the map of every X event's correlation.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kineto_sql import EngineChoice, KinetoTraceProcessor
from kineto_sql.loading import flows
from kineto_sql.loading.load import open_prepared
from kineto_sql.loading.prepare import prepare
from kineto_sql.loading.source import read_bytes
from tests.conftest import CORPUS, needs_corpus
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep

FLOW_SQL = """
    SELECT a.name AS out_name, a.ts AS out_ts, b.name AS in_name, b.ts AS in_ts
    FROM flow f JOIN slice a ON a.id = f.slice_out JOIN slice b ON b.id = f.slice_in
    ORDER BY a.ts, b.ts"""


def _raw(trace: KinetoTrace) -> bytes:
    return json.dumps(trace.to_json()).encode()


def _prepare(raw: bytes, monkeypatch=None, check_every_flow: bool = False):
    """prepare(); with check_every_flow, every flow event is treated as at risk (the full check)."""
    if check_every_flow:
        real = flows._intended_and_at_risk

        def every_flow(events, scan, moved):
            intended_of, _ = real(events, scan, moved)
            return intended_of, list(intended_of)

        monkeypatch.setattr(flows, "_intended_and_at_risk", every_flow)
    try:
        return prepare(raw, Path("t.json"))
    finally:
        if check_every_flow:
            monkeypatch.undo()


def _at_risk(raw: bytes, monkeypatch) -> list[str]:
    """The names of the flow events found at risk, as ph@ts."""
    seen = []
    real = flows._intended_and_at_risk

    def spy(events, scan, moved):
        intended_of, at_risk = real(events, scan, moved)
        seen.extend(f"{events[j]['ph']}@{events[j]['ts']}" for j in at_risk)
        return intended_of, at_risk

    monkeypatch.setattr(flows, "_intended_and_at_risk", spy)
    prepare(raw, Path("t.json"))
    monkeypatch.undo()
    return seen


def _engine_view(prepared):
    with open_prepared(prepared, Path("t.json")) as tp:
        return (tp.df(FLOW_SQL).values.tolist(), int(tp.df("SELECT count(*) AS n FROM slice").n[0]))


SAFE = KinetoTrace([
    ProfilerStep(1, ts_us=0, dur_us=1000),
    CpuOp("aten::add", ts_us=10, dur_us=100),
    Launch(correlation=1, ts_us=20, dur_us=8),
    Launch(correlation=2, ts_us=40, dur_us=8),
    Kernel(correlation=1, ts_us=50, dur_us=30),
    Kernel(correlation=2, ts_us=90, dur_us=30),
])


def test_no_flow_at_risk_skips_them_all_with_identical_engine_results(monkeypatch):
    raw = _raw(SAFE)
    assert _at_risk(raw, monkeypatch) == []
    skipped = _prepare(raw)
    full = _prepare(raw, monkeypatch, check_every_flow=True)
    assert skipped.data == full.data
    assert [(f.kind, f.count) for f in skipped.report.fixes] == [(f.kind, f.count) for f in full.report.fixes]
    assert skipped.report.fix_count("flow_bound_explicitly") == 0
    view = _engine_view(skipped)
    assert view == _engine_view(full)
    assert view == ([["cudaLaunchKernel", 20000, "void at::native::vectorized_elementwise_kernel<4>()", 50000],
                     ["cudaLaunchKernel", 40000, "void at::native::vectorized_elementwise_kernel<4>()", 90000]], 6)


def _with_sibling(trace: KinetoTrace) -> bytes:
    """Adds a shorter cudaFuncSetAttribute on the launch's thread at the launch's instant: the X events
    at one instant sort longest first, so the importer binds the launch's flow to this sibling."""
    doc = trace.to_json()
    launch = next(e for e in doc["traceEvents"] if e.get("name") == "cudaLaunchKernel" and e["ts"] == 40)
    doc["traceEvents"].append({**launch, "name": "cudaFuncSetAttribute", "dur": 2, "args": {"cbid": 9}})
    return json.dumps(doc).encode()


def test_a_flow_at_risk_is_found_and_fixed(monkeypatch):
    raw = _with_sibling(SAFE)
    assert _at_risk(raw, monkeypatch) == ["s@40.0"]
    kernel = "void at::native::vectorized_elementwise_kernel<4>()"
    # The bare engine, given the file as it is, draws the second arrow from the sibling.
    with KinetoTraceProcessor(EngineChoice("wasm")) as bare:
        bare.load_bytes(raw)
        assert bare.df(FLOW_SQL).values.tolist() == [["cudaLaunchKernel", 20000, kernel, 50000],
                                                     ["cudaFuncSetAttribute", 40000, kernel, 90000]]
    prepared = _prepare(raw)
    assert prepared.report.fix_count("flow_bound_explicitly") == 1
    assert prepared.data == _prepare(raw, monkeypatch, check_every_flow=True).data
    assert _engine_view(prepared) == ([["cudaLaunchKernel", 20000, kernel, 50000],
                                       ["cudaLaunchKernel", 40000, kernel, 90000]], 7)


@pytest.mark.parametrize("change, risky", [
    # the flow sits inside its slice, not at its start: a slice begun in between would take it
    (lambda e: e.update(ts=41.0) if e.get("ph") == "s" and e["id"] == 2 else None, ["s@41.0"]),
    # a flow end that binds to the next slice (no bp "e") cannot bind to the kernel it sits on
    (lambda e: e.pop("bp") if e.get("ph") == "f" and e["id"] == 1 else None, ["f@50.0"]),
])
def test_what_puts_a_flow_at_risk(monkeypatch, change, risky):
    doc = SAFE.to_json()
    for e in doc["traceEvents"]:
        change(e)
    assert _at_risk(json.dumps(doc).encode(), monkeypatch) == risky


def test_with_overlap_lanes_only_flows_of_moved_slices_are_at_risk(monkeypatch):
    # Kernel 3 overlaps kernel 2 on stream 7 without nesting: it moves to a lane, and its flow end with it.
    trace = KinetoTrace(list(SAFE.events) + [Launch(correlation=3, ts_us=60, dur_us=8),
                                            Kernel(correlation=3, ts_us=100, dur_us=30)])
    raw = _raw(trace)
    assert _at_risk(raw, monkeypatch) == ["f@100.0"]
    prepared = _prepare(raw)
    assert prepared.report.fix_count("overlap_lane") == 1
    assert prepared.report.fix_count("flow_followed_lane") == 1
    assert prepared.data == _prepare(raw, monkeypatch, check_every_flow=True).data
    flows_out, slices = _engine_view(prepared)
    assert [(r[0], r[1], r[3]) for r in flows_out] == [
        ("cudaLaunchKernel", 20000, 50000), ("cudaLaunchKernel", 40000, 90000), ("cudaLaunchKernel", 60000, 100000)]
    assert slices == 8


def _whole_reading(events, scan, moved):
    """_intended_and_at_risk as it reads without its common case: every flow event looked up in the map of
    every X event's correlation (scan.by_correlation), its slice chosen by _intended_slice."""
    intended_of, at_risk = {}, []
    begins = Counter(zip(scan.push_track, scan.push_ts))
    for j, track in zip(scan.flow_indices, scan.flow_tracks):
        ts = scan.ts_ns[j]
        e = events[j]
        candidates = scan.by_correlation.get((track, flows._as_int(e.id)))
        if ts is None or candidates is None:
            continue
        intended = flows._intended_slice(events, [candidates] if isinstance(candidates, int) else candidates, ts)
        if intended is None:
            continue
        intended_of[j] = intended
        if (scan.ts_ns[intended] != ts or begins[(track, ts)] > 1 or intended in moved
                or not (e.ph != "f" or e.bp == "e")):
            at_risk.append(j)
    return intended_of, at_risk


def _readings(raw: bytes, monkeypatch) -> tuple:
    """(_intended_and_at_risk's reading, the whole reading) of one prepare of `raw`."""
    seen = []
    real = flows._intended_and_at_risk

    def both(events, scan, moved):
        seen.append(_whole_reading(events, scan, moved))
        out = real(events, scan, moved)
        seen.insert(0, out)
        return out

    monkeypatch.setattr(flows, "_intended_and_at_risk", both)
    prepare(raw, Path("t.json"))
    monkeypatch.undo()
    return tuple(seen)


def _edited(edit) -> bytes:
    doc = SAFE.to_json()
    doc["traceEvents"] = edit(doc["traceEvents"])
    return json.dumps(doc).encode()


def _launch(events, ts):
    return next(e for e in events if e.get("name") == "cudaLaunchKernel" and e["ts"] == ts)


EDITS = {
    "as_written": lambda events: events,
    # a shorter slice beside the launch at its instant (the flow is at risk: two slices begin there)
    "sibling_first_in_file": lambda events: [{**_launch(events, 40), "name": "cudaFuncSetAttribute", "dur": 2,
                                              "args": {"cbid": 9}}] + events,
    # the sibling carries the same correlation and comes first in the file: it is the intended slice
    "sibling_with_the_correlation": lambda events: [{**_launch(events, 40), "name": "cudaFuncSetAttribute",
                                                     "dur": 2}] + events,
    # another slice with the launch's correlation elsewhere on its thread (it contains no flow)
    "correlation_twice": lambda events: events + [{**_launch(events, 20), "ts": 400, "name": "cudaMemcpyAsync"}],
    # another slice with it that contains the flow and begins before it: the one that begins there wins
    "correlation_on_an_enclosing_slice": lambda events: events + [{**_launch(events, 40), "ts": 35, "dur": 20,
                                                                   "name": "cudaGraphLaunch"}],
    # the flow sits inside its slice: no slice with its id begins there
    "flow_inside_its_slice": lambda events: [dict(e, ts=42.0) if e.get("ph") == "s" and e["id"] == 2 else e
                                             for e in events],
    # an id written as a string (hex), the launch's correlation as the same number
    "string_ids": lambda events: [dict(e, id="0x2") if e.get("ph") in ("s", "f") and e["id"] == 2 else e
                                  for e in events],
    # a slice without the correlation is the one that begins where the flow sits
    "wrong_slice_at_the_flow": lambda events: [dict(e, args={"cbid": 1}) if e.get("name") == "cudaLaunchKernel"
                                               and e["ts"] == 40 else e for e in events],
    # the one slice where the flow sits carries another correlation (the flow's id is on no slice)
    "other_correlation_at_the_flow": lambda events: [dict(e, args={"correlation": 7}) if e.get("name") ==
                                                     "cudaLaunchKernel" and e["ts"] == 40 else e for e in events],
    # an instant at the flow's point (a slice-pushing event that is not an X event)
    "instant_at_the_flow": lambda events: events + [{"ph": "i", "s": "t", "name": "mark", "ts": 40,
                                                     "pid": _launch(events, 40)["pid"],
                                                     "tid": _launch(events, 40)["tid"]}],
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_the_common_case_reads_as_the_whole_correlation_map(name, monkeypatch):
    fast, whole = _readings(_edited(EDITS[name]), monkeypatch)
    assert fast == whole
    assert len(whole[0]) >= 3  # (each case keeps flows with an intended slice)


@needs_corpus
def test_the_common_case_reads_as_the_whole_map_on_a_real_trace(monkeypatch):
    raw = read_bytes(CORPUS / "hta_trace_diff_control.json.gz")
    fast, whole = _readings(raw, monkeypatch)
    assert fast == whole
    assert len(whole[0]) > 30_000 and 0 < len(whole[1]) < 2_000
