"""A rewritten trace reaches the engine piece by piece (PreparedTrace.chunks): the pieces are exactly the
text a one-shot write gives, across piece boundaries, and the engine ends up with the same trace."""
from __future__ import annotations

import json
from pathlib import Path

import msgspec
import orjson
import pytest

from kineto_sql import EngineChoice, KinetoTraceProcessor
from kineto_sql.loading import prepare as prepare_module
from kineto_sql.loading.decode import decode_trace
from kineto_sql.loading.load import open_prepared
from kineto_sql.loading.prepare import prepare
from tests.kineto_builder import Kernel, KinetoTrace, Launch, ProfilerStep

COUNTS = "SELECT (SELECT count(*) FROM slice) AS slices, (SELECT count(*) FROM flow) AS flows"


def _trace(n: int, metadata: dict) -> bytes:
    """n launch/kernel pairs; kernel 1 overlaps kernel 0 on its stream, so the trace is rewritten."""
    events = [ProfilerStep(1, ts_us=0, dur_us=100 * n + 100)]
    for i in range(n):
        events.append(Launch(correlation=i + 1, ts_us=10 + 100 * i, dur_us=8))
        events.append(Kernel(correlation=i + 1, ts_us=50 + 100 * i - (30 if i == 1 else 0), dur_us=80 if i == 0 else 60))
    return json.dumps(KinetoTrace(events, metadata).to_json()).encode()


@pytest.mark.parametrize("metadata", [{}, {"distributedInfo": {"rank": 3, "world_size": 8}}])
def test_pieces_are_the_one_shot_text(monkeypatch, metadata):
    monkeypatch.setattr(prepare_module, "CHUNK_EVENTS", 7)  # many boundaries on a small trace
    raw = _trace(20, metadata)
    prepared = prepare(raw, Path("t.json"))
    assert prepared.report.rewritten and prepared.report.fix_count("overlap_lane") == 1
    expected = orjson.loads(msgspec.json.encode({"traceEvents": list(prepared._events), **prepared.metadata}))
    pieces = list(prepared.chunks())
    assert len(pieces) == 2 + -(-len(expected["traceEvents"]) // 7)
    assert orjson.loads(b"".join(pieces)) == expected
    with pytest.raises(RuntimeError, match="already written out"):
        list(prepared.chunks())


def test_the_engine_gets_the_same_trace_from_pieces(monkeypatch):
    monkeypatch.setattr(prepare_module, "CHUNK_EVENTS", 5)
    raw = _trace(12, {})
    whole = prepare(raw, Path("t.json")).data
    with KinetoTraceProcessor(EngineChoice("wasm")) as tp:
        tp.load_bytes(whole)
        want = tp.df(COUNTS).values.tolist()
    with open_prepared(prepare(raw, Path("t.json")), Path("t.json")) as tp:
        assert tp.df(COUNTS).values.tolist() == want == [[25, 12]]
        assert tp.df("SELECT count(*) AS n FROM stats WHERE severity IN ('error', 'data_loss') AND value > 0").n[0] == 0


def _tricky_doc(n: int) -> dict:
    """Events whose args hold what a piece cut could be fooled by: '}, {' and '}]' inside strings, lists
    of objects, nested objects at the end of an event; top-level keys on both sides of traceEvents."""
    events = [{"ph": "X", "name": f'op "}}, {{" {i} }}]', "pid": 1, "tid": 1, "ts": i * 10, "dur": 5,
               "args": {"list": [{"a": i}, {"b": "}, {"}], "obj": {"c": {"d": "}]"}}}} for i in range(n)]
    return {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"id": 0, "name": "x}, {y"}],
            "traceName": "t"}


@pytest.mark.parametrize("shape", ["object", "nested traceEvents key first", "bare list"])
def test_the_decoded_trace_written_back_is_the_parsed_document(shape):
    doc = _tricky_doc(300)
    if shape == "nested traceEvents key first":
        doc = {"distributedInfo": {"traceEvents": [{"x": 1}]}, **doc}
    raw = orjson.dumps(doc["traceEvents"] if shape == "bare list" else doc, option=orjson.OPT_INDENT_2)
    decoded = decode_trace(raw, Path("t.json"))
    assert orjson.loads(msgspec.json.encode(decoded.events)) == doc["traceEvents"]
    assert decoded.metadata == ({} if shape == "bare list" else {k: v for k, v in doc.items() if k != "traceEvents"})
