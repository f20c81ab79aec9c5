"""prepare() does only the work a trace needs, and each fix changes exactly what it says.

The args pass runs only where the text shows a need (a null, an integer beyond int64, an escape), tested
both ways; the id fixes are tested on what they write; an unchanged trace is loaded as its own bytes.
"""
from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading import arg_values
from kineto_sql.loading.prepare import prepare
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep


def _overlapping(n: int = 4) -> bytes:
    """Launch/kernel pairs where kernel 1 overlaps kernel 0 on its stream: the trace is rewritten."""
    events = [ProfilerStep(1, ts_us=0, dur_us=100 * n + 100)]
    for i in range(n):
        events.append(Launch(correlation=i + 1, ts_us=10 + 100 * i, dur_us=8))
        events.append(Kernel(correlation=i + 1, ts_us=50 + 100 * i - (30 if i == 1 else 0),
                             dur_us=80 if i == 0 else 60))
    return json.dumps(KinetoTrace(events).to_json()).encode()


def test_a_rewritten_trace_is_written_from_its_events_and_the_collector_is_on_again():
    assert gc.isenabled()
    prepared = prepare(_overlapping(), Path("t.json"))
    assert prepared.report.rewritten and prepared.report.fix_count("overlap_lane") == 1
    assert gc.isenabled()
    text = b"".join(prepared.chunks())
    assert sum(e["ph"] == "X" for e in json.loads(text)["traceEvents"]) == 9


def test_an_unchanged_trace_is_its_own_bytes_and_a_refused_one_leaves_the_collector_on():
    raw = json.dumps(KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=100), Launch(correlation=1, ts_us=10, dur_us=8),
                                  Kernel(correlation=1, ts_us=50, dur_us=30)]).to_json()).encode()
    prepared = prepare(raw, Path("t.json"))
    assert not prepared.report.rewritten and prepared.data == raw
    with pytest.raises(Exception, match="empty event list"):  # (the refusal itself: test_validation)
        prepare(b'{"traceEvents": []}', Path("t.json"))
    assert gc.isenabled()


# -- the args pass: ruled out from the text ---------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    (b'{"a": 1, "name": "decltype(nullptr)", "b": "x: nul"}', False),
    (b'{"a": null}', True),
    (b'{"a": [1,\n  null]}', True),
    (b'{"a": "see: null"}', True),  # inside a string: a "maybe", so the pass runs
    (b'null', False),
])
def test_null_token(text, expected):
    assert arg_values.null_token(text) is expected


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
    assert arg_values.integer_beyond_int64(text) is expected


_ARG_TEXTS = [b'{"t": 1661203462598738}', b'{"x": 9223372036854775808}', b'{"a": null}', b'null',
              b'{"a": [1,\n  null]}', b'{"x": -9223372036854775808}', b'{"f": 12345678901234567890123.5}',
              b'{"name": "see: null"}']


@pytest.mark.parametrize("picked", [[0], [0, 3], [0, 2], [3, 5, 6], [1], [4, 0], [7], [6, 0, 5]])
@pytest.mark.parametrize("before", [0, 4095, 5000])  # (the batch is 4096 texts: at its edge, and past it)
def test_args_searched_together_read_as_alone(picked, before):
    """The args texts searched a batch at a time give what each text searched alone gives (no digit run or
    null is made where two texts meet), wherever in a batch they fall."""
    import msgspec

    from kineto_sql.loading.decode import Event
    plain = msgspec.Raw(b'{"Sequence number": 12}')
    texts = [_ARG_TEXTS[i] for i in picked]
    events = [Event(ph="X", args=plain) for _ in range(before)] + [Event(ph="X", args=msgspec.Raw(t)) for t in texts]
    events.insert(before // 2, Event(ph="X"))  # (an event without args)
    expected = (any(arg_values.integer_beyond_int64(t) for t in texts), any(arg_values.null_token(t) for t in texts))
    assert arg_values._args_may_hold(events) == expected


def _many_ops(n: int, args: dict | None = None, at: int = 3) -> dict:
    """n host ops; op number `at` carries `args` (the rest carry small ints and lists)."""
    ops = [CpuOp(f"aten::op{i}", ts_us=10 * i, dur_us=5, args={"Input Dims": [[1, 2], [3]], "Sequence number": i})
           for i in range(n)]
    if args is not None:
        ops[at] = CpuOp(f"aten::op{at}", ts_us=10 * at, dur_us=5, args=args)
    return KinetoTrace(ops).to_json()


def _prepare_counting_decoded_args(monkeypatch, doc: dict):
    """prepare() on the text of `doc`; how many events' args the args pass decoded."""
    calls = []
    real = arg_values._decoded
    monkeypatch.setattr(arg_values, "_decoded", lambda raw: calls.append(1) or real(raw))
    return prepare(json.dumps(doc).encode(), Path("t.json")), len(calls)


def test_a_trace_without_null_or_huge_args_decodes_no_args(monkeypatch):
    doc = _many_ops(200, {"x": 2**63 - 1, "y": [[[1]]], "name": "decltype(nullptr)"})
    prepared, calls = _prepare_counting_decoded_args(monkeypatch, doc)
    assert calls == 0
    assert prepared.report.fixes == [] and not prepared.report.rewritten


@pytest.mark.parametrize("args, kind, count", [
    ({"a": 2**63, "b": [1, 2**64 - 1]}, "integer_beyond_int64_as_string", 2),
    ({"a": 10**30 + 1, "b": [1, -(2**70) - 3]}, "integer_beyond_int64_as_string", 2),
    ({"a": None, "b": None}, "null_arg_not_stored", 2),
])
def test_the_args_pass_runs_on_the_events_whose_text_shows_a_need(monkeypatch, args, kind, count):
    prepared, calls = _prepare_counting_decoded_args(monkeypatch, _many_ops(200, args, at=150))
    assert calls == 1  # that one event's args
    assert [(f.kind, f.count) for f in prepared.report.fixes] == [(kind, count)]
    assert prepared.report.rewritten is (kind != "null_arg_not_stored")  # a null is only reported
    if prepared.report.rewritten:
        op = next(e for e in json.loads(prepared.data)["traceEvents"] if e.get("name") == "aten::op150")
        assert op["args"] == {k: [str(x) if abs(x) > 1 else x for x in v] if isinstance(v, list) else str(v)
                              for k, v in args.items()}


# -- ids: remapped and tid 0 split exactly as before, skipped when no event needs it ----------------

def test_a_string_pid_is_remapped_and_named():
    doc = _many_ops(50)
    doc["traceEvents"].append({"ph": "X", "name": "span", "cat": "user_annotation", "pid": "Spans", "tid": 7,
                               "ts": 5, "dur": 3})
    prepared = prepare(json.dumps(doc).encode(), Path("t.json"))
    assert [(f.kind, f.count, f.examples) for f in prepared.report.fixes] == [
        ("id_remapped", 1, ("pid 'Spans' -> 4200000000",))]
    written = json.loads(prepared.data)["traceEvents"]
    assert [e for e in written if e.get("pid") == 4200000000] == [
        {"ph": "X", "name": "span", "cat": "user_annotation", "pid": 4200000000, "tid": 7, "ts": 5, "dur": 3},
        {"ph": "M", "name": "process_name", "pid": 4200000000, "tid": 0, "args": {"name": "Spans"}}]


def test_tid_zero_is_split_off_the_main_thread():
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


def _deep(depth: int):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


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
    """remap_ids looks only at survey.odd_ids: those must be every event its maps hit (the maps' keys are
    the pid/tid values that are not an int of 0..2^32-1)."""
    from kineto_sql.loading.decode import decode_trace
    from kineto_sql.loading.ids import _MISSING, _valid_id
    from kineto_sql.loading.report import IngestReport
    from kineto_sql.loading.validate import validate_and_survey

    decoded = decode_trace(json.dumps({"traceEvents": entries}).encode(), Path("t.json"))
    events, survey = validate_and_survey(decoded.events, IngestReport(source="t.json", input_bytes=0))
    changed = {value for value in list(survey.pids) + list(survey.tids)
               if _valid_id(value) is None or _valid_id(value) != value or type(value) is not int}
    hit = [i for i, e in enumerate(events)
           if e.get("pid", _MISSING) in changed or e.get("tid", _MISSING) in changed]
    assert survey.odd_ids == hit
