"""prepare() does only the work a trace needs, and the shortcuts change nothing the engine holds.

Each shortcut is tested both ways: where it applies (the pass is skipped, the result is the same as the
full pass) and where it must not (the trace is still fixed exactly as before).
"""
from __future__ import annotations

import gc
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading.prepare import prepare
from tests.kineto_builder import Kernel, KinetoTrace, Launch, ProfilerStep


def _overlapping(n: int = 4) -> bytes:
    """Launch/kernel pairs where kernel 1 overlaps kernel 0 on its stream: the trace is rewritten."""
    events = [ProfilerStep(1, ts_us=0, dur_us=100 * n + 100)]
    for i in range(n):
        events.append(Launch(correlation=i + 1, ts_us=10 + 100 * i, dur_us=8))
        events.append(Kernel(correlation=i + 1, ts_us=50 + 100 * i - (30 if i == 1 else 0),
                             dur_us=80 if i == 0 else 60))
    return json.dumps(KinetoTrace(events).to_json()).encode()


def test_the_collector_is_paused_while_preparing_and_the_held_events_frozen_until_written():
    assert gc.isenabled()
    frozen_before = gc.get_freeze_count()
    prepared = prepare(_overlapping(), Path("t.json"))
    assert prepared.report.rewritten and prepared.report.fix_count("overlap_lane") == 1
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen_before  # the held events are out of the collector's walks
    text = b"".join(prepared.chunks())
    assert gc.get_freeze_count() == 0  # written out: back to the collector
    assert sum(e["ph"] == "X" for e in json.loads(text)["traceEvents"]) == 9


def test_an_unwritten_prepared_trace_unfreezes_when_dropped():
    prepared = prepare(_overlapping(), Path("t.json"))
    assert gc.get_freeze_count() > 0
    del prepared
    assert gc.get_freeze_count() == 0


def test_an_unchanged_trace_freezes_nothing_and_a_refused_one_leaves_the_collector_on():
    raw = json.dumps(KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=100), Launch(correlation=1, ts_us=10, dur_us=8),
                                  Kernel(correlation=1, ts_us=50, dur_us=30)]).to_json()).encode()
    prepared = prepare(raw, Path("t.json"))
    assert not prepared.report.rewritten and prepared.data == raw
    assert gc.get_freeze_count() == 0
    try:
        prepare(b'{"traceEvents": []}', Path("t.json"))
    except Exception as exc:  # noqa: BLE001 - the refusal itself is tested in test_validation
        assert "empty event list" in str(exc)
    assert gc.isenabled()


# -- the args pass: ruled out from the text ---------------------------------------------------------

import pytest  # noqa: E402

from kineto_sql.loading import prepare as prepare_module  # noqa: E402
from kineto_sql.loading import rawcheck, source  # noqa: E402
from tests.kineto_builder import CpuOp  # noqa: E402


@pytest.mark.parametrize("text, expected", [
    (b'{"a": 1, "name": "decltype(nullptr)", "b": "x: nul"}', False),
    (b'{"a": null}', True),
    (b'{"a": [1,\n  null]}', True),
    (b'{"a": "see: null"}', True),  # inside a string: a "maybe", so the pass runs
    (b'null', False),
])
def test_null_token(text, expected):
    assert rawcheck.null_token(text) is expected


@pytest.mark.parametrize("text, expected", [
    (b'{"t": 1661203462598738, "x": 9223372036854775807, "y": -9223372036854775808}', False),
    (b'{"baseTimeNanoseconds": 1727743122000000000}', False),
    (b'{"x": 9223372036854775808}', True),
    (b'{"x": -9223372036854775809}', True),
    (b'{"x": 123456789012345678901234567890}', True),
    (b'{"bw": 0.0022727272727272726, "m": 12345678901234567890123e4, "f": 12345678901234567890123.5}', False),
    (b'{"name": "id 99999999999999999999"}', True),  # a digit run inside a string is a "maybe"
    (b'99999999999999999999', True),  # at the very start and end of the text
    (b'{"x": 18446744073709551615}', True),
])
def test_integer_beyond_int64(text, expected):
    assert rawcheck.integer_beyond_int64(text) is expected


def test_long_digit_runs_are_every_run_of_19_or_more_digits():
    import random
    import re

    rng = random.Random(7)
    for _ in range(2000):
        text = bytes(rng.choice(b"0123456789" * 4 + b'.e-,: "ax\x00\xff') for _ in range(rng.randint(0, 90)))
        runs = [(m.start(), m.end()) for m in re.finditer(rb"\d{19,}", text)]
        assert rawcheck._long_digit_runs_numpy(text) == runs
        if rawcheck._crawcheck is not None:  # (the compiled form, where a C compiler built it)
            assert rawcheck._crawcheck.long_digit_runs(text) == runs


def _many_ops(n: int, args: dict | None = None, at: int = 3) -> dict:
    """n host ops; op number `at` carries `args` (the rest carry small ints and lists)."""
    ops = [CpuOp(f"aten::op{i}", ts_us=10 * i, dur_us=5, args={"Input Dims": [[1, 2], [3]], "Sequence number": i})
           for i in range(n)]
    if args is not None:
        ops[at] = CpuOp(f"aten::op{at}", ts_us=10 * at, dur_us=5, args=args)
    return KinetoTrace(ops).to_json()


def _deep(depth: int):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def _prepare_counting_args_pass(monkeypatch, doc: dict):
    """prepare() on the text of `doc`, parsed in pieces (as a large trace is); how often the args pass ran."""
    monkeypatch.setattr(source, "PIECE_BYTES", 2000)
    calls = []
    real = prepare_module._scan_args
    monkeypatch.setattr(prepare_module, "_scan_args", lambda events, report: calls.append(1) or real(events, report))
    raw = json.dumps(doc).encode()
    assert len(raw) > 2 * source.PIECE_BYTES
    return prepare(raw, Path("t.json")), len(calls)


def test_a_trace_without_null_huge_or_deep_args_skips_the_args_pass(monkeypatch):
    prepared, calls = _prepare_counting_args_pass(monkeypatch, _many_ops(200, {"x": 2**63 - 1, "y": [[[1]]]}))
    assert calls == 0
    assert prepared.report.fixes == [] and not prepared.report.rewritten


@pytest.mark.parametrize("args, kind, count", [
    ({"a": 2**63, "b": [1, 2**64 - 1]}, "integer_beyond_int64_as_string", 2),
    # beyond 64 bits orjson reads an integer as the nearest double: the text is parsed exactly instead
    ({"a": 10**30 + 1, "b": [1, -(2**70) - 3]}, "integer_beyond_int64_as_string", 2),
    ({"a": None, "b": None}, "null_arg_not_stored", 2),
    ({"deep": _deep(300)}, "args_too_deep_cut", 1),
])
def test_the_args_pass_still_runs_where_the_text_shows_a_need(monkeypatch, args, kind, count):
    prepared, calls = _prepare_counting_args_pass(monkeypatch, _many_ops(200, args, at=150))
    assert calls == 1
    assert [(f.kind, f.count) for f in prepared.report.fixes] == [(kind, count)]
    assert prepared.report.rewritten is (kind != "null_arg_not_stored")  # a null is only reported
    if prepared.report.rewritten:
        op = next(e for e in json.loads(prepared.data)["traceEvents"] if e.get("name") == "aten::op150")
        if kind == "args_too_deep_cut":
            value, levels = op["args"]["deep"], 0
            while isinstance(value, list):
                value, levels = value[0], levels + 1
            assert (levels, value) == (32, "<nested too deep>")
        else:
            assert op["args"] == {k: [str(x) if abs(x) > 1 else x for x in v] if isinstance(v, list) else str(v)
                                  for k, v in args.items()}


def _nested_objects_doc(n: int, deep_at: int | None = None) -> dict:
    """Events whose args hold lists of lists of objects, where a cut between `}, {` lands inside a list
    nested in a list: `[` + piece + `]` fails there, and only a check of the wrappers keeps the probed
    parse from taking `{y}], [{z}` for whole values."""
    events = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1,
               "args": {"l": [[{"x": i}, {"y": i}], [{"z": i}, {"w": "}, {"}]]}} for i in range(n)]
    if deep_at is not None:
        events[deep_at]["args"]["deep"] = _deep(300)
    return {"traceEvents": events, "traceName": "t"}


@pytest.mark.parametrize("piece_bytes", [500, 700, 997, 1500])
def test_the_probed_parse_is_the_whole_parse_and_bounds_the_depth(monkeypatch, piece_bytes):
    monkeypatch.setattr(source, "PIECE_BYTES", piece_bytes)
    for deep_at, bounded in ((None, True), (250, False)):
        raw = json.dumps(_nested_objects_doc(400, deep_at)).encode()
        assert source._parse_in_pieces(raw) is not None  # these sizes split (others fall back to a whole parse)
        doc, probed = source.parse_trace_probed(raw, Path("t.json"))
        assert doc == json.loads(raw)
        assert probed is bounded


def test_a_small_trace_parsed_whole_has_no_depth_bound():
    raw = json.dumps(_nested_objects_doc(3)).encode()
    assert source.parse_trace_probed(raw, Path("t.json")) == (json.loads(raw), False)


# -- ids: remapped and tid 0 split exactly as before, skipped when no event needs it ----------------

def test_a_string_pid_is_still_remapped_and_named(monkeypatch):
    doc = _many_ops(50)
    doc["traceEvents"].append({"ph": "X", "name": "span", "cat": "user_annotation", "pid": "Spans", "tid": 7,
                               "ts": 5, "dur": 3})
    monkeypatch.setattr(source, "PIECE_BYTES", 1000)
    prepared = prepare(json.dumps(doc).encode(), Path("t.json"))
    assert [(f.kind, f.count, f.examples) for f in prepared.report.fixes] == [
        ("id_remapped", 1, ("pid 'Spans' -> 4200000000",))]
    written = json.loads(prepared.data)["traceEvents"]
    assert [e for e in written if e.get("pid") == 4200000000] == [
        {"ph": "X", "name": "span", "cat": "user_annotation", "pid": 4200000000, "tid": 7, "ts": 5, "dur": 3},
        {"ph": "M", "name": "process_name", "pid": 4200000000, "tid": 0, "args": {"name": "Spans"}}]


def test_tid_zero_is_still_split_off_the_main_thread():
    ops = [CpuOp("main", ts_us=0, dur_us=10, tid=100), CpuOp("other", ts_us=2, dur_us=20, tid=0),
           CpuOp("other2", ts_us=30, dur_us=1, tid=0)]
    prepared = prepare(json.dumps(KinetoTrace(ops).to_json()).encode(), Path("t.json"))
    assert [(f.kind, f.count, f.examples) for f in prepared.report.fixes] == [("tid_zero_split", 2, ("pid 100",))]
    written = json.loads(prepared.data)["traceEvents"]
    assert [(e["name"], e["tid"]) for e in written if e["ph"] == "X"] == [
        ("main", 100), ("other", 4150000000), ("other2", 4150000000)]
    assert written[-1] == {"ph": "M", "name": "thread_name", "pid": 100, "tid": 4150000000, "args": {"name": "tid 0"}}


def test_tid_zero_alone_or_only_on_metadata_is_left_as_it_is():
    # tid 0 on process_name metadata (every Kineto trace), and X events on tid 0 of a process whose
    # main thread (tid = pid) has no events: nothing merges, nothing changes.
    ops = [CpuOp("a", ts_us=0, dur_us=10, tid=0), CpuOp("b", ts_us=20, dur_us=1, tid=5)]
    raw = json.dumps(KinetoTrace(ops).to_json()).encode()
    prepared = prepare(raw, Path("t.json"))
    assert prepared.report.fixes == [] and prepared.data == raw


@pytest.mark.parametrize("piece, items", [
    (b'{"a": 1}, {"b": [2]}', [{"a": 1}, {"b": [2]}]),
    (b'{"y": 1}], [{"z": 2}', None),  # balanced only inside the wrappers: not a run of whole values
    (b'{"y": 1}]]], [[[{"z": 2}', None),
    (b'{"y": "}], [{"}', [{"y": "}], [{"}]),
])
def test_a_wrapped_piece_is_taken_only_when_it_is_the_plain_parse(piece, items):
    probe = source.DepthProbe()
    assert probe.wrap == 1024 - 1 - source.EVENT_DEPTH  # orjson 3's depth limit is 1024
    assert probe.loads_items(piece) == items
    assert probe.bounded


@pytest.mark.parametrize("depth, cut", [(251, False), (252, False), (254, False), (255, True), (300, True)])
def test_a_rewritten_trace_writes_every_arg_its_writer_could_write_alone(depth, cut):
    # The overlapping kernels make the trace rewritten, so every arg is written back inside its event in
    # the list of events: 3 levels above the value. orjson stops at 255 levels; a value of 252-254 is
    # written by the stdlib, deeper ones were cut (and reported) by the args pass.
    doc = json.loads(_overlapping())
    next(e for e in doc["traceEvents"] if e.get("name") == "cudaLaunchKernel")["args"]["deep"] = _deep(depth)
    prepared = prepare(json.dumps(doc).encode(), Path("t.json"))
    assert prepared.report.fix_count("args_too_deep_cut") == (1 if cut else 0)
    written = json.loads(prepared.data)["traceEvents"]  # writable at every depth
    value, levels = next(e for e in written if "deep" in e.get("args", {}))["args"]["deep"], 0
    while isinstance(value, list):
        value, levels = value[0], levels + 1
    assert (levels, value) == ((32, "<nested too deep>") if cut else (depth, 1))


def test_a_metadata_field_too_deep_to_be_written_back_is_kept_as_text():
    doc = json.loads(_overlapping())
    doc["traceName"] = "t"
    doc["extra"] = _deep(254)  # 254 levels inside the document: one too many for the writer
    prepared = prepare(json.dumps(doc).encode(), Path("t.json"))
    assert prepared.report.fix_count("metadata_field_ignored") == 1
    assert json.loads(prepared.data)["extra"].startswith("[[[[")


_ID = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([2**32 - 1, 2**32, -2**40]),
                st.sampled_from(["", "7", "x", "0"]), st.just([1]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"ph": st.sampled_from(["X", "M", "i"]), "ts": st.just(1)},
                                      optional={"pid": _ID, "tid": _ID}), min_size=1, max_size=10))
def test_the_id_remap_visits_every_event_whose_ids_it_can_change(entries):
    """_remap_ids looks only at survey.odd_ids: those must be every event its maps hit (the maps' keys are
    the pid/tid values that are not an int of 0..2^32-1)."""
    from kineto_sql.loading.prepare import _MISSING, _valid_id
    from kineto_sql.loading.report import IngestReport
    from kineto_sql.loading.validate import validate_and_survey

    events, survey = validate_and_survey(entries, IngestReport(source="t.json", input_bytes=0))
    changed = {value for value in list(survey.pids) + list(survey.tids)
               if _valid_id(value) is None or _valid_id(value) != value or type(value) is not int}
    hit = [i for i, e in enumerate(events)
           if e.get("pid", _MISSING) in changed or e.get("tid", _MISSING) in changed]
    assert survey.odd_ids == hit


_NESTED = st.recursive(st.integers(0, 3), lambda inner: st.lists(inner, max_size=2), max_leaves=8)


@settings(max_examples=500, deadline=None)
@given(_NESTED, st.integers(0, 6))
def test_the_compiled_unwrapping_of_a_probed_piece_is_the_python_one(value, levels):
    """source.DepthProbe's walk down its wrapper lists, compiled (_crawcheck.innermost), on any nesting."""
    from kineto_sql.loading import source

    if source._innermost is source._innermost_python:
        pytest.skip("no C compiler here: the walk runs in Python only")
    assert source._innermost(value, levels) == source._innermost_python(value, levels)
    wrapped = value
    for _ in range(levels):
        wrapped = [wrapped]
    assert source._innermost(wrapped, levels) is value
