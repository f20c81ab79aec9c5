"""rebase keeps every timestamp's exact value: after the rebase, each event's `ts` plus the offset in the
report is the field as written (the engine reads the double nearest the exact difference, computed from
the digits, never from a double of the epoch value), and none is negative (Perfetto drops those).

A negative field with a fraction lies below its integer part (-4999.5 + 5000 is 0.5, not 1.5) and a
field with an exponent is not its digits, so the base is the floor of the smallest value and those
fields are subtracted from their exact decimal value."""
from __future__ import annotations

import math
import re
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kineto_sql.loading.prepare import prepare

_TS = re.compile(rb'"ts"\s*:\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)')

_VALUE = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.builds(lambda i, f: f"{i}.{f}", st.integers(-10**6, 10**6), st.from_regex(r"\A[0-9]{1,6}\Z")),
    st.builds(lambda i, f: f"-0.{f}", st.just(0), st.from_regex(r"\A[0-9]{1,6}\Z")),
    st.builds(lambda i, f: f"{i}.{f}", st.integers(10**15, 9 * 10**15), st.from_regex(r"\A[0-9]{1,3}\Z")),
    st.builds(lambda m, e: f"{m}e{e}", st.decimals(-10**4, 10**4, places=3).map(str), st.integers(-3, 11)),
)


def _text(values: list[str]) -> bytes:
    events = ",".join(f'{{"ph":"X","name":"e{i}","ts":{v},"dur":1}}' for i, v in enumerate(values))
    return f'{{"traceEvents":[{events}]}}'.encode()


def _values(text: bytes) -> list[Decimal]:
    return [Decimal(m.decode()) for m in _TS.findall(text)]


def _rebased(text: bytes):
    """The report and the text the engine gets, of `text` prepared."""
    prepared = prepare(text, Path("t.json"))
    return prepared.report, prepared.data


def _nearest(value: Decimal) -> Decimal:
    """The double nearest `value`, exactly: what the engine reads from its decimal text."""
    return Decimal(float(value))


@settings(max_examples=400, deadline=None)
@given(st.lists(_VALUE, min_size=1, max_size=12))
def test_every_timestamp_keeps_its_exact_value(values):
    text = _text(values)
    report, out = _rebased(text)
    orjson.loads(out)  # still JSON
    offset_us = Decimal(report.ts_offset_ns) / 1000
    before, after = _values(text), _values(out)
    assert [_nearest(a) for a in after] == [_nearest(b - offset_us) for b in before]
    if report.ts_offset_ns:
        assert min(after) >= 0


def test_negative_fractions_and_exponents_by_hand():
    text = _text(["-4999.5", "-5000.25", "-0.5", "1.5e3"])
    report, out = _rebased(text)
    assert report.ts_offset_ns == -5001_000  # the floor of -5000.25
    assert _values(out) == [Decimal("1.5"), Decimal("0.75"), Decimal("5000.5"), Decimal("6501")]
    assert [e["ts"] for e in orjson.loads(out)["traceEvents"] if "ts" in e] == [1.5, 0.75, 5000.5, 6501]


def _with_metadata(values: list[str], metadata: list[str]) -> bytes:
    names = ",".join(f'{{"ph":"M","name":"thread_name","pid":1,"tid":{i},"ts":{v},"args":{{"name":"t{i}"}}}}'
                     for i, v in enumerate(metadata))
    events = ",".join(f'{{"name":"e{i}","ts":{v},"ph":"X","dur":1}}' for i, v in enumerate(values))
    return f'{{"traceEvents":[{names},{events}]}}'.encode()


def test_metadata_timestamps_do_not_set_the_base():
    # HTA's MTIA writer puts ts 0.0 on the metadata events; with it in the span the base was 0 and these
    # epoch timestamps kept only the double's ~0.25 us
    text = _with_metadata(["1700000000000010.123", "1700000000000020.5"], ["0", "0.0", "1700000000000000"])
    report, out = _rebased(text)
    assert report.ts_offset_ns == 1700000000000010_000
    events = [e for e in orjson.loads(out)["traceEvents"] if "ts" in e]
    assert [e["ts"] for e in events] == [0, 0.0, 0, 0.123, 10.5]  # the metadata ones below the base: 0
    assert {f.kind: f.count for f in report.fixes} == {"timestamps_rebased": 5, "metadata_ts_zeroed": 3}


def test_metadata_timestamps_decide_only_when_the_events_need_no_rebase():
    # a negative metadata timestamp beside small event times still shifts the whole trace, as before
    text = _with_metadata(["10.5", "20"], ["-5"])
    report, out = _rebased(text)
    assert report.ts_offset_ns == -5000
    assert [e["ts"] for e in orjson.loads(out)["traceEvents"] if "ts" in e] == [0, 15.5, 25]
    assert [f.kind for f in report.fixes] == ["timestamps_rebased"]


_EPOCH = st.builds(lambda i, f: f"{i}.{f}", st.integers(10**15, 10**15 + 10**9), st.from_regex(r"\A[0-9]{0,2}[1-9]\Z"))


@settings(max_examples=300, deadline=None)
@given(st.lists(_EPOCH, min_size=1, max_size=8), st.lists(st.one_of(_VALUE, _EPOCH), min_size=1, max_size=4))
def test_event_timestamps_keep_their_exact_value_whatever_the_metadata_says(values, metadata):
    text = _with_metadata(values, metadata)
    report, out = _rebased(text)
    offset_us = Decimal(report.ts_offset_ns) / 1000
    after = _values(out)
    assert [a + offset_us for a in after[len(metadata):]] == _values(text)[len(metadata):]
    assert min(after) >= 0 and min(after[len(metadata):]) < 1  # the base is the floor of the events' smallest


def test_the_engine_keeps_every_nanosecond_and_every_name_beside_metadata_at_0(tmp_path):
    from kineto_sql import open_trace

    starts = [f"17000000000{k:05d}.{k % 1000:03d}" for k in range(0, 50000, 997)]
    names = [{"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "ts": 0, "args": {"name": "trainer"}},
             {"ph": "M", "name": "thread_name", "pid": 7, "tid": 8, "ts": 0.0, "args": {"name": "main"}}]
    events = ",".join(f'{{"ph":"X","name":"op{k}","pid":7,"tid":8,"ts":{ts},"dur":0.5}}' for k, ts in enumerate(starts))
    path = tmp_path / "epoch.json"
    path.write_text('{"traceEvents":[' + ",".join(orjson.dumps(n).decode() for n in names) + "," + events + "]}")
    tp = open_trace(path)
    try:
        offset = tp.loaded.report.ts_offset_ns
        rows = tp.rows("SELECT s.name, s.ts, t.name AS thread, p.name AS process FROM slice s "
                       "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
                       "JOIN process p USING (upid) ORDER BY s.ts").records()
        dropped = tp.rows("SELECT value FROM stats WHERE name = 'trace_sorter_negative_timestamp_dropped'").records()
    finally:
        tp.close()
    assert offset == 1_700_000_000_000_000_000
    assert tp.loaded.report.fix_count("nested_ts_restored") == 0  # only the events' own were shifted
    assert [r["ts"] + offset for r in rows] == [int(Decimal(ts) * 1000) for ts in starts]
    assert {(r["thread"], r["process"]) for r in rows} == {("main", "trainer")}
    assert [r["value"] for r in dropped] in ([], [0])


def _args_named_ts_trace(tmp_path, listed: int):
    events = ",".join(
        f'{{"ph":"X","name":"op{k}","pid":1,"tid":2,"ts":17000000000{k * 10:05d}.25,"dur":1.5,'
        f'"args":{{"ts":1700000000000123,"nested":{{"ts":1700000000000456.5}},"list":[{{"ts":{listed}}}],"n":{k}}}}}'
        for k in range(3))
    path = tmp_path / "args_named_ts.json"
    path.write_text('{"ts": 1700000000000999, "traceEvents":[' + events + "]}")
    return path


@pytest.mark.parametrize("listed", [1700000000000789, 3])
def test_fields_named_ts_that_are_not_an_events_own_keep_their_value(tmp_path, listed):
    from kineto_sql import open_trace

    tp = open_trace(_args_named_ts_trace(tmp_path, listed))
    try:
        report, metadata = tp.loaded.report, tp.loaded.metadata
        args = tp.rows("SELECT key, int_value, real_value FROM args WHERE key GLOB 'args.*ts' "
                       "GROUP BY 1, 2, 3 ORDER BY 1").records()
        starts = [r["ts"] + report.ts_offset_ns for r in tp.rows("SELECT ts FROM slice ORDER BY ts").records()]
    finally:
        tp.close()
    assert [(r["key"], r["int_value"], r["real_value"]) for r in args] == [
        ("args.list[0].ts", listed, None), ("args.nested.ts", None, 1700000000000456.5),
        ("args.ts", 1700000000000123, None)]
    assert metadata["ts"] == 1700000000000999
    assert report.fix_count("nested_ts_restored") == 0  # only the events' own ts are ever shifted
    # the events' own times set the base (an arg named ts below them does not)
    assert report.ts_offset_ns == 1_700_000_000_000_000_000
    assert starts == [1_700_000_000_000_000_250 + k * 10_000 for k in range(3)]  # every nanosecond
    assert report.fix_count("timestamps_not_exact") == 0


def test_a_timestamp_written_as_a_string_stays_on_the_clock_of_the_others(tmp_path):
    from kineto_sql import open_trace

    events = [f'{{"ph":"X","name":"op{k}","pid":1,"tid":2,"ts":17000000000{k * 10:05d}.25,"dur":1.5}}' for k in range(3)]
    events.append('{"ph":"X","name":"as_text","pid":1,"tid":2,"ts":"1700000000000100.125","dur":1.5}')
    events.append('{"ph":"M","name":"thread_name","pid":1,"tid":2,"ts":"0","args":{"name":"main"}}')
    path = tmp_path / "string_ts.json"
    path.write_text('{"traceEvents":[' + ",".join(events) + "]}")
    tp = open_trace(path)
    try:
        report = tp.loaded.report
        rows = tp.rows("SELECT s.name, s.ts, t.name AS thread FROM slice s JOIN thread_track tt ON s.track_id = tt.id "
                       "JOIN thread t USING (utid) ORDER BY s.ts").records()
    finally:
        tp.close()
    assert report.ts_offset_ns == 1_700_000_000_000_000_000
    assert [(r["name"], r["ts"], r["thread"]) for r in rows] == [
        ("op0", 250, "main"), ("op1", 10_250, "main"), ("op2", 20_250, "main"), ("as_text", 100_125, "main")]
    assert report.fix_count("string_ts_rebased") == 2


_FRACTION = st.from_regex(r"\A[0-9]{0,2}[1-9]\Z")
_ARG_TS = st.one_of(st.integers(-10**16, 10**16).map(str),
                    st.builds(lambda i, f: f"{i}.{f}", st.integers(-10**16, 10**16), _FRACTION))
_META_TS = st.one_of(st.just("0"), st.just("0.0"), st.integers(-10**6, 10**16).map(str))


@st.composite
def _mixed_traces(draw):
    """One capture's events (epoch microseconds, or small ones around 0: a base can make every one small),
    each a number or a numeric string, some with an arg named ts before or after it, beside metadata."""
    low = draw(st.sampled_from([10**15, -10**6]))
    ts = st.builds(lambda i, f: f"{i}.{f}", st.integers(low, low + 2 * 10**6 if low < 0 else low + 10**9), _FRACTION)
    events = draw(st.lists(st.tuples(ts, st.booleans(), st.one_of(st.none(), _ARG_TS), st.booleans()),
                           min_size=1, max_size=6))
    return events, draw(st.lists(_META_TS, max_size=3))


@settings(max_examples=300, deadline=None)
@given(_mixed_traces())
def test_after_prepare_every_time_is_where_the_file_put_it(trace):
    """The whole rebase story at once, on prepare()'s own output: events' timestamps (numbers or numeric
    strings) plus the offset are the file's, to the last digit, and none is negative; args named ts keep
    their value (an integer exactly, a fraction to a double at its shifted value); metadata timestamps
    are never negative. (Run with 2000 examples on 6 seeds when written.)"""
    events, metadata = trace
    names = [f'{{"ph":"M","name":"thread_name","pid":1,"tid":{i},"ts":{v},"args":{{"name":"t{i}"}}}}'
             for i, v in enumerate(metadata)]
    written = []
    for i, (ts, as_text, arg, args_first) in enumerate(events):
        args = f'"args":{{"ts":{arg}}},' if arg is not None else ""
        written.append(f'{{"ph":"X",{args if args_first else ""}"name":"e{i}","pid":1,"tid":1,'
                       f'"ts":{chr(34) + ts + chr(34) if as_text else ts},{"" if args_first else args}"dur":1}}')
    prepared = prepare(('{"traceEvents":[' + ",".join(names + written) + "]}").encode(), Path("t.json"))
    parsed = _parse_exact(prepared.data)
    offset_us = Decimal(prepared.report.ts_offset_ns) / 1000
    own = [e for e in parsed["traceEvents"] if e["ph"] == "X"]
    assert [Decimal(str(e["ts"])) + offset_us for e in own] == [Decimal(ts) for ts, *_ in events]
    assert all(Decimal(str(e["ts"])) >= 0 for e in own)
    for e, (_, _, arg, _) in zip(own, events):
        if arg is None:
            assert "args" not in e
        elif "." in arg:
            shifted = abs(float(arg) - float(offset_us))
            assert math.isclose(e["args"]["ts"], float(arg), abs_tol=shifted * 2**-51)
        else:
            assert e["args"]["ts"] == int(arg)
    assert all(Decimal(str(e.get("ts", 0))) >= 0 for e in parsed["traceEvents"] if e["ph"] == "M")
    assert prepared.report.fix_count("timestamps_not_exact") == 0


def _parse_exact(data: bytes):
    import json

    return json.loads(data, parse_float=Decimal)
