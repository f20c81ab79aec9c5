"""decode.py cuts the traceEvents list out of the top level by its text (_split_top); the result must be the
whole decode's, or the cut must be declined (None) and the whole decode used, whatever the top level holds."""
from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kineto_sql.errors import TraceInputError
from kineto_sql.loading import decode

EVENT = b'{"ph": "X", "name": "a]", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"l": [1, 2]}}'

# name -> (text, whether _split_top offers a cut)
TOPS = {
    "events_only": (b'{"traceEvents": [' + EVENT + b"]}", True),
    "kineto_layout": (b'{"schemaVersion": 1, "deviceProperties": [{"id": 0}], "traceEvents": [\n  ' + EVENT
                      + b'\n], "traceName": "t]", "displayTimeUnit": "ms", "baseTimeNanoseconds": 5}', True),
    # closing brackets after the list: the last ones are tried first and rejected
    "list_after_events": (b'{"traceEvents": [' + EVENT + b'], "after": [[1], [2, [3]]], "s": "]]"}', True),
    # a "traceEvents" key inside another field, before the real one: the cut is declined
    "nested_key_first": (b'{"meta": {"traceEvents": [1]}, "traceEvents": [' + EVENT + b"]}", False),
    # ... even when the real list is itself empty (the placeholder must be the top level's traceEvents)
    "nested_key_real_empty": (b'{"meta": {"traceEvents": [' + EVENT + b']}, "traceEvents": []}', False),
    # two top-level lists: the last one is the document's (as a dict decode reads it); the cut offered
    # (first list to last bracket) is not one JSON value, so its decode fails and the whole decode is used
    "duplicate_key": (b'{"traceEvents": [' + EVENT + b'], "traceEvents": [' + EVENT + b", " + EVENT + b"]}", True),
}


def _whole(raw: bytes, monkeypatch) -> decode.Decoded:
    with monkeypatch.context() as m:
        m.setattr(decode, "_split_top", lambda raw: None)
        return decode.decode_trace(raw, Path("t.json"))


@pytest.mark.parametrize("name", sorted(TOPS))
def test_cut_gives_the_whole_decode(name, monkeypatch):
    raw, taken = TOPS[name]
    assert (decode._split_top(raw) is not None) == taken
    fast, whole = decode.decode_trace(raw, Path("t.json")), _whole(raw, monkeypatch)
    assert msgspec.json.encode(fast.events) == msgspec.json.encode(whole.events)
    assert fast.metadata == whole.metadata
    assert bytes(fast.events_text) == bytes(whole.events_text)


def test_kineto_layout_keeps_every_top_field_in_order():
    fast = decode.decode_trace(TOPS["kineto_layout"][0], Path("t.json"))
    assert list(fast.metadata) == ["schemaVersion", "deviceProperties", "traceName", "displayTimeUnit",
                                   "baseTimeNanoseconds"]
    assert [e.name for e in fast.events] == ["a]"]


@pytest.mark.parametrize("raw", [
    b'{"traceEvents": [{"ph": "X", "ts": 1,, "dur": 2}], "traceName": "t"}',  # malformed inside the list
    b'{"traceEvents": [{"ph": "X", "ts": 1}], "traceName": }',  # malformed after it
])
def test_a_bad_file_gets_the_whole_decodes_sentence(raw, monkeypatch):
    with pytest.raises(TraceInputError) as fast:
        decode.decode_trace(raw, Path("t.json"))
    with pytest.raises(TraceInputError) as whole:
        _whole(raw, monkeypatch)
    assert str(fast.value) == str(whole.value)
    assert "line 1 column" in str(fast.value)


def test_kineto_fields_decode_slim_and_any_other_field_decodes_full():
    """A trace with only the fields Kineto writes decodes into KinetoEvent (smaller), one with any other Event
    field into Event; both are written back as the same bytes (KinetoEvent keeps Event's field order), and an
    explicit flow binding (flows.py) turns a KinetoEvent into an Event first."""
    from kineto_sql.loading.decode import Event, KinetoEvent, full

    kineto = b'[{"ph":"X","name":"a","cat":"c","pid":1,"tid":2,"ts":3,"dur":4,"id":5,"bp":"e","s":"t","args":{"k":1}}]'
    slim = decode.decode_trace(kineto, Path("t.json")).events
    assert type(slim[0]) is KinetoEvent
    assert msgspec.json.encode(slim) == kineto == msgspec.json.encode([full(slim[0])])
    assert type(full(slim[0])) is Event and full(slim[0]) == msgspec.json.decode(kineto, type=list[Event])[0]
    other = kineto.replace(b'"dur":4,', b'"dur":4,"tts":7,')
    wide = decode.decode_trace(other, Path("t.json")).events
    assert type(wide[0]) is Event and msgspec.json.encode(wide) == other and full(wide[0]) is wide[0]
