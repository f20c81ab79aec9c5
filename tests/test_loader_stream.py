"""A trace file parsed as it is read (loading.stream) prepares exactly as its whole text does.

prepare_path never holds the whole text beside the parsed events; these tests hold it to prepare() of the
whole text on the same file: the same ingest report and the same bytes for the engine, rewritten or not,
gzip (one member or several) or plain, with cuts a piece could be fooled by; and where the streamed parse
cannot stand for the whole one (a corrupt file, a trace small enough to parse whole) it steps aside and the whole-text path gives its result and its errors.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import time
import zlib
from pathlib import Path

import numpy as np
import orjson
import pytest

from kineto_sql.errors import TraceInputError
from kineto_sql.loading import lazy_args, rebase, source, stream, text_facts, ts_fields
from kineto_sql.loading.prepare import prepare, prepare_path
from kineto_sql.loading.source import read_bytes
from tests.kineto_builder import Kernel, KinetoTrace, Launch, ProfilerStep


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    monkeypatch.setattr(source, "PIECE_BYTES", 1000)
    monkeypatch.setattr(stream, "READ_BYTES", 777)  # blocks that end anywhere, inside events and gzip members


def _trace(n: int, overlap: bool) -> dict:
    events = [ProfilerStep(1, ts_us=0, dur_us=100 * n + 100)]
    for i in range(n):
        events.append(Launch(correlation=i + 1, ts_us=10 + 100 * i, dur_us=8))
        events.append(Kernel(correlation=i + 1, ts_us=50 + 100 * i - (30 if overlap and i == 1 else 0),
                             dur_us=80 if overlap and i == 0 else 60))
    doc = KinetoTrace(events, {"distributedInfo": {"rank": 3, "world_size": 8}}).to_json()
    return {"schemaVersion": 1, **doc, "traceName": "after the events"}


def _tricky(n: int) -> dict:
    """'}, {' and '}]' inside strings, lists of objects, nested objects at the end of an event."""
    events = [{"ph": "X", "name": f'op "}}, {{" {i} }}]', "pid": 1, "tid": 1, "ts": i * 10, "dur": 5,
               "args": {"list": [{"a": i}, {"b": "}, {"}], "obj": {"c": {"d": "}]"}}}} for i in range(n)]
    return {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"id": 0, "name": "x}, {y"}]}


def _write(tmp_path: Path, doc, how: str) -> Path:
    text = json.dumps(doc, indent=1).encode()
    if how == "plain":
        path = tmp_path / "t.json"
        path.write_bytes(text)
    elif how == "gzip":
        path = tmp_path / "t.json.gz"
        path.write_bytes(gzip.compress(text))
    else:  # two gzip members, cut mid-event: gzip -d gives their texts joined
        path = tmp_path / "t.json.gz"
        path.write_bytes(gzip.compress(text[:len(text) // 3]) + gzip.compress(text[len(text) // 3:]))
    return path


@contextlib.contextmanager
def _args_parsed():
    """The streamed parse with every args parsed, as the whole-text parse does (no lazy_args cut)."""
    kept = lazy_args._cargs
    lazy_args._cargs = None
    try:
        yield
    finally:
        lazy_args._cargs = kept


def _same_as_whole(path: Path):
    """prepare_path of the file, with its text facts searched in the parse and by the helper process,
    against prepare() of the whole text: the same bytes with every args parsed; with the args kept as the
    file's text (lazy_args), the same JSON values (the args as written, not as orjson writes them)."""
    whole = prepare(read_bytes(path), path)
    with _args_parsed():
        parsed = prepare_path(path)
    assert parsed.data == whole.data
    expected = orjson.loads(whole.data)
    for facts_helper in (False, True):
        streamed = prepare_path(path, facts_helper=facts_helper)
        assert dataclasses.asdict(streamed.report) == dataclasses.asdict(whole.report)
        assert streamed.metadata == whole.metadata
        assert orjson.loads(streamed.data) == expected
    return streamed


@pytest.mark.parametrize("how", ["plain", "gzip", "gzip members"])
@pytest.mark.parametrize("overlap", [True, False])
def test_a_streamed_trace_prepares_as_its_whole_text(tmp_path, how, overlap):
    path = _write(tmp_path, _trace(60, overlap), how)
    assert len(read_bytes(path)) > 2 * source.PIECE_BYTES
    assert stream.parse_file(path) is not None  # the streamed path ran
    prepared = _same_as_whole(path)
    assert prepared.report.rewritten is overlap
    assert prepared.report.fix_count("overlap_lane") == (1 if overlap else 0)
    if not overlap:  # unchanged: the engine gets the file's own text, read again
        assert prepared.data == read_bytes(path)


def test_cuts_inside_strings_and_nested_objects_are_not_taken(tmp_path):
    path = _write(tmp_path, _tricky(300), "gzip")
    streamed = stream.parse_file(path)
    assert streamed is not None
    kept = [e["args"] for e in streamed.doc["traceEvents"] if type(e.get("args")) is lazy_args.ArgsText]
    assert len(kept) >= 300  # the args, brackets and quotes in their strings, are kept as their text
    assert all(k.text in read_bytes(path) for k in kept)
    lazy_args.materialize(streamed.doc["traceEvents"])
    assert streamed.doc == orjson.loads(read_bytes(path))
    assert list(streamed.doc) == ["schemaVersion", "traceEvents", "deviceProperties"]
    _same_as_whole(path)


def test_the_text_checks_are_answered_from_the_pieces(tmp_path):
    doc = _trace(60, False)
    doc["traceEvents"][70].setdefault("args", {})["note"] = None  # a null arg: the args pass must run
    path = _write(tmp_path, doc, "gzip")
    streamed = stream.parse_file(path)
    assert streamed.args_may_change and streamed.shallow
    assert _same_as_whole(path).report.fix_count("null_arg_not_stored") == 1
    clean = stream.parse_file(_write(tmp_path, _trace(60, False), "plain"))
    assert not clean.args_may_change


def _facts(streamed: stream.StreamedDoc | None):
    if streamed is None:
        return None
    return streamed.args_may_change, streamed.string_ts, streamed.shallow, streamed.rebased is not None


@pytest.fixture
def helpers(monkeypatch):
    """The pids of the facts helpers started while a test runs."""
    started, real_fork = [], os.fork

    def fork():
        pid = real_fork()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(text_facts.os, "fork", fork)
    return started


def _all_waited_for(pids: list[int]):
    assert pids
    for pid in pids:
        with pytest.raises(ChildProcessError):  # waited for already: no such child is left
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize("how", ["plain", "a null arg", "an integer beyond int64", "a timestamp as text",
                                 "epoch microseconds with a fraction", "negative", "an integer orjson rounds",
                                 "'[null' opens the events"])
def test_the_helper_process_finds_the_facts_the_pieces_show(tmp_path, how, helpers):
    doc = _trace(60, False)
    args = doc["traceEvents"][70].setdefault("args", {})
    events = doc["traceEvents"]
    if how == "a null arg":
        args["note"] = None
    elif how == "an integer beyond int64":
        args["big"] = 2**63 + 5
    elif how == "a timestamp as text":
        events[70]["ts"] = str(events[70]["ts"])
    elif how == "an integer orjson rounds":
        args["big"] = 10**30 + 1
    elif how in ("epoch microseconds with a fraction", "negative"):
        for e in events:
            if "ts" in e:
                e["ts"] = (1_700_000_000_000 + e["ts"] + 0.125) if how.startswith("epoch") else e["ts"] - 5000
    path = _write(tmp_path, doc, "gzip")
    if how == "'[null' opens the events":  # outside the pieces: the helper says maybe, the args pass finds none
        path.write_bytes(gzip.compress(read_bytes(path).replace(b'"traceEvents": [', b'"traceEvents": [null, ', 1)))
    inline, helped = stream.parse_file(path), stream.parse_file(path, facts_helper=True)
    _all_waited_for(helpers)
    if how == "'[null' opens the events":
        assert not inline.args_may_change and helped.args_may_change
        assert _facts(inline)[1:] == _facts(helped)[1:]
    else:
        assert _facts(helped) == _facts(inline)
    assert (inline is None) is (how == "an integer orjson rounds")
    prepared = _same_as_whole(path)
    if how == "'[null' opens the events":
        assert prepared.report.dropped_count == 1 and prepared.report.fix_count("null_arg_not_stored") == 0


def test_a_helper_that_ends_without_an_answer_leaves_the_whole_text_to_say(tmp_path, monkeypatch, helpers):
    path = _write(tmp_path, _trace(60, True), "gzip")
    monkeypatch.setattr(text_facts, "_helper", lambda parts, writer: os._exit(1))
    assert stream.parse_file(path, facts_helper=True) is None
    _all_waited_for(helpers)
    _same_as_whole(path)


def test_a_parse_that_steps_aside_first_ends_its_helper(tmp_path, monkeypatch, helpers):
    path = _write(tmp_path, _trace(1, False), "gzip")  # small: the whole-text parse is the one used
    monkeypatch.setattr(text_facts, "_helper", lambda parts, writer: (time.sleep(60), os._exit(0)))
    started = time.perf_counter()
    assert stream.parse_file(path, facts_helper=True) is None
    assert time.perf_counter() - started < 30  # not waited for: killed
    _all_waited_for(helpers)


@pytest.mark.parametrize("how", ["epoch microseconds with a fraction", "negative", "epoch, metadata at 0",
                                 "epoch, an arg named ts", "epoch, an arg named ts below the events"])
def test_timestamps_that_need_the_rebase_are_rebased_piece_by_piece(tmp_path, how):
    doc = _trace(60, False)
    for e in doc["traceEvents"]:
        if "ts" in e:
            e["ts"] = (1_700_000_000_000 + e["ts"] + 0.125) if how.startswith("epoch") else e["ts"] - 5000
    metadata = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    if how == "epoch, metadata at 0":  # as HTA's MTIA trace writes them (ts before args, as Kineto does)
        assert metadata
        doc["traceEvents"] = [{"ph": "M", "ts": 0, **e} if e["ph"] == "M" else e for e in doc["traceEvents"]]
    if "an arg named ts" in how:  # the second one is read twice: the rebase is chosen again without it
        doc["traceEvents"][70].setdefault("args", {})["ts"] = 7 if how.endswith("below the events") else 1_700_000_000_123
    path = _write(tmp_path, doc, "gzip")
    streamed = stream.parse_file(path)
    assert streamed is not None and streamed.rebased is not None
    prepared = _same_as_whole(path)
    assert prepared.report.fix_count("nested_ts_restored") == (1 if "named ts" in how else 0)
    assert prepared.report.fix_count("timestamps_not_exact") == 0
    assert prepared.report.ts_offset_ns == (1_700_000_000_000 if how.startswith("epoch") else -5000) * 1000
    assert prepared.report.fix_count("timestamps_rebased") == (len([e for e in doc["traceEvents"] if "ts" in e])
                                                               + ("named ts" in how))
    assert prepared.report.fix_count("metadata_ts_zeroed") == (len(metadata) if how.endswith("at 0") else 0)


@pytest.mark.parametrize("why", ["small", "nested key first", "an integer orjson rounds"])
def test_it_steps_aside_where_the_whole_text_must_be_read(tmp_path, why):
    doc = _trace(60, True) if why != "small" else _trace(1, False)
    if why == "nested key first":
        doc = {"producer": {"traceEvents": [{"x": 1}]}, **doc}
    if why == "an integer orjson rounds":
        doc["traceEvents"][90].setdefault("args", {})["big"] = 10**30 + 1
    path = _write(tmp_path, doc, "gzip")
    assert stream.parse_file(path) is None
    prepared = _same_as_whole(path)
    if why == "an integer orjson rounds":
        assert str(10**30 + 1).encode() in prepared.data


def test_a_corrupt_gzip_gets_the_whole_read_sentence(tmp_path):
    path = _write(tmp_path, _trace(60, True), "gzip")
    path.write_bytes(path.read_bytes()[:-200])
    assert stream.parse_file(path) is None
    with pytest.raises(TraceInputError, match="corrupt or truncated gzip"):
        prepare_path(path)


def _inflate_with_zlib(monkeypatch):
    """The loader as it runs where ISA-L has no wheel: gzip / zlib inflate (after ISA-L was in use)."""
    assert source.inflate_module.__name__.startswith("isal")
    monkeypatch.setattr(source, "_gzip", gzip)
    monkeypatch.setattr(source, "inflate_module", zlib)


@pytest.mark.parametrize("how", ["gzip", "gzip members"])
def test_zlib_stands_in_for_isal_with_the_same_bytes(tmp_path, monkeypatch, how):
    path = _write(tmp_path, _trace(60, True), how)
    with_isal = prepare_path(path)
    _inflate_with_zlib(monkeypatch)
    with_zlib = _same_as_whole(path)
    assert with_zlib.data == with_isal.data
    assert dataclasses.asdict(with_zlib.report) == dataclasses.asdict(with_isal.report)


def test_zlib_stands_in_for_isal_with_the_same_refusal(tmp_path, monkeypatch):
    path = _write(tmp_path, _trace(60, True), "gzip")
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(TraceInputError, match="corrupt or truncated gzip") as with_isal:
        prepare_path(path)
    _inflate_with_zlib(monkeypatch)
    with pytest.raises(TraceInputError) as with_zlib:
        prepare_path(path)
    assert str(with_zlib.value) == str(with_isal.value)


def test_a_file_that_changes_while_it_is_read_is_refused(tmp_path, monkeypatch):
    path = _write(tmp_path, _trace(60, False), "gzip")
    seen = []

    def identity(p):
        seen.append(p)
        return ("first read",) if len(seen) == 1 else ("written since",)

    monkeypatch.setattr(stream, "file_identity", identity)
    with pytest.raises(TraceInputError, match="changed while it was being read"):
        prepare_path(path)


def test_every_rebase_case_at_once_streams_as_the_whole_text(tmp_path):
    # metadata at 0, a timestamp as text, args named ts above and below the events (read twice), a list
    names = [{"ph": "M", "ts": 0, "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}}]
    events = [{"ph": "X", "name": f"e{i}", "pid": 1, "tid": 1, "ts": 1_700_000_000_000 + 10 * i + 0.125, "dur": 1,
               "args": {"n": i}} for i in range(200)]
    events[5]["ts"] = "1700000000050.375"
    events[9]["args"]["ts"] = 3
    events[12]["args"]["when"] = [{"ts": 1_700_000_000_555.5}]
    path = _write(tmp_path, {"traceEvents": names + events}, "gzip")
    prepared = _same_as_whole(path)
    report = prepared.report
    assert report.ts_offset_ns == 1_700_000_000_000_000
    assert [report.fix_count(k) for k in ("metadata_ts_zeroed", "string_ts_rebased", "nested_ts_restored",
                                          "timestamps_not_exact")] == [1, 1, 2, 0]
    out = json.loads(prepared.data, parse_float=lambda text: text)
    got = {e["name"]: e for e in out["traceEvents"] if e["ph"] == "X"}
    assert got["e0"]["ts"] == "0.125" and got["e5"]["ts"] == "50.375"
    assert got["e9"]["args"]["ts"] == 3 and got["e12"]["args"]["when"] == [{"ts": "1700000000555.5"}]


@pytest.mark.parametrize("declined", [False, True])
def test_each_piece_is_shifted_with_the_fields_the_span_pass_read(tmp_path, monkeypatch, declined):
    # the fields handed to the shift of a piece are exactly what reading the piece gives; a block whose
    # fields the arrays decline (a timestamp with an exponent) leaves its pieces to read their own
    doc = _trace(60, False)
    for e in doc["traceEvents"]:
        if "ts" in e:
            e["ts"] = 1_700_000_000_000 + e["ts"] + 0.125
    path = _write(tmp_path, doc, "gzip")
    if declined:
        text = read_bytes(path).replace(b'"ts": 1700000000010.125', b'"ts": 1.700000000010125e12', 1)
        assert b"e12" in text
        path.write_bytes(gzip.compress(text))
    handed, read_here, real = [], [], stream.shift

    def checked(piece, base, *fields):
        if fields:
            mine = ts_fields.read(piece)
            assert mine is not None and all(np.array_equal(getattr(fields[0], k), getattr(mine, k))
                                            and getattr(fields[0], k).dtype == getattr(mine, k).dtype
                                            for k in ("start", "end", "value", "negative", "fractional"))
            assert np.array_equal(fields[0].metadata, rebase.metadata_fields(piece, mine.start))
            handed.append(len(mine.start))
        else:
            read_here.append(piece)
        return real(piece, base, *fields)

    monkeypatch.setattr(stream, "shift", checked)
    assert stream.parse_file(path).rebased is not None
    monkeypatch.undo()
    events = len([e for e in doc["traceEvents"] if "ts" in e])
    assert (sum(handed) == events) is not declined and bool(read_here) is declined  # every field, or all but a block's
    assert _same_as_whole(path).report.ts_offset_ns == 1_700_000_000_000_000
