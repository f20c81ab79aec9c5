"""The loader's scan loop compiled (loading/_cscan.c) gives the columns the Python loop gives
(scan.scan_events_python), on real traces and on events of any shape; it is built wherever a C compiler is."""
from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading import scan
from tests.conftest import arguments_of, real_traces

pytestmark = pytest.mark.skipif(scan._cscan is None and not (shutil.which("cc") or shutil.which("gcc")),
                                reason="no C compiler here: the scan runs its Python loop only")

LISTS = ("tracks", "track_of", "ts_ns", "by_correlation", "flow_indices", "flow_tracks")
ARRAYS = ("push_index", "push_track", "push_ts", "push_negdur", "push_placed")


def _assert_same(compiled: scan.TraceScan, python: scan.TraceScan) -> None:
    for field in LISTS:
        assert getattr(compiled, field) == getattr(python, field), field
        # the same types too (1 == 1.0 == True would hide a conversion)
        assert list(map(type, _flat(getattr(compiled, field)))) == list(map(type, _flat(getattr(python, field))))
    for field in ARRAYS:
        a, b = np.asarray(getattr(compiled, field)), getattr(python, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field


def _flat(value) -> list:
    if isinstance(value, dict):
        return _flat(list(value.items()))
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _compiled(events):
    """The compiled loop's TraceScan, or None where it hands the events back to the Python loop."""
    columns = scan._cscan.scan(events, scan.fast_ns)
    return None if columns is None else scan._scan_of_buffers(*columns)


def test_the_compiled_scan_is_built():
    assert scan._cscan is not None, "pip install built no kineto_sql.loading._cscan although a C compiler is here"


@pytest.mark.parametrize("path", real_traces("hta_critical_path_alexnet.json.gz", "tl_h100_bert_small.json.gz",
                                              "hta_ns_resolution_rank0.pt.trace.json.gz"), ids=lambda p: p.name)
def test_the_same_columns_on_real_traces(monkeypatch, path):
    (events,) = arguments_of(monkeypatch, "scan_events", path)
    compiled = _compiled(events)
    assert compiled is not None  # validated events are all of the shapes it reads
    assert len(compiled.push_index) > 0
    _assert_same(compiled, scan.scan_events_python(events))


_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                   st.sampled_from(["", "0", "7", "1.5", "x", "t"]), st.just([1]))
_EVENT = st.one_of(
    st.fixed_dictionaries(
        {"ph": st.sampled_from(["X", "s", "t", "f", "i", "I", "M", "C", "B", "XX"])},
        optional={"pid": _VALUE, "tid": _VALUE, "ts": _VALUE, "dur": _VALUE,
                  "s": st.one_of(st.sampled_from(["t", "p", "g"]), _VALUE),
                  "args": st.one_of(st.none(), st.just([1]), st.fixed_dictionaries(
                      {}, optional={"correlation": _VALUE}))}),
    st.just({}), st.just([1]), st.just({"ph": 1, "ts": 1}))


@settings(max_examples=300, deadline=None)
@given(st.lists(_EVENT, max_size=12))
def test_the_same_columns_or_the_python_loop_on_events_of_any_shape(events):
    """Either the compiled loop gives the Python loop's columns, or it hands the events back (None) and
    scan_events runs the Python loop; an error (a missing ph) is the Python loop's own."""
    try:
        python = scan.scan_events_python(events)
    except Exception as error:  # noqa: BLE001 - whatever the Python loop raises, scan_events raises
        with pytest.raises(type(error)):
            scan.scan_events(events)
        return
    compiled = _compiled(events)
    if compiled is not None:
        _assert_same(compiled, python)
    _assert_same(scan.scan_events(events), python)


def test_a_float_time_is_rounded_as_the_engine_rounds_it():
    events = [{"ph": "X", "pid": 1, "tid": 1, "ts": 1.0005, "dur": 2.0025}, {"ph": "X", "pid": 1, "tid": 1,
              "ts": math.inf, "dur": 1}, {"ph": "i", "pid": 1, "tid": 1, "ts": "3.5"}]
    compiled = _compiled(events)
    assert compiled.ts_ns == [1001, None, 3500] == scan.scan_events_python(events).ts_ns
    assert compiled.push_negdur.tolist() == [-2003, 0]


def test_the_loops_look_up_by_orjson_s_own_key_objects_and_still_find_any_equal_key():
    """validate, scan and the flow loops take orjson's cached key objects as their keys (use_keys), so a
    parsed event's keys match by identity; an event whose keys are other objects of the same text (a
    dict built in Python, or a key orjson's cache has since replaced) gives the same columns."""
    import orjson

    from kineto_sql.loading import flows, validate
    from kineto_sql.loading.events import orjson_keys

    text = (b'[{"ph":"X","pid":1,"tid":2,"ts":5,"dur":3,"args":{"correlation":7}},'
            b'{"ph":"s","pid":1,"tid":2,"ts":5,"id":7,"cat":"ac2g","name":"n"},{"ph":"i","s":"t","pid":1,"tid":2,"ts":6}]')
    parsed = orjson.loads(text)
    keys = orjson_keys()
    assert all(k is next(q for q in keys if q == k) for k in parsed[0] if k in keys)  # orjson's own objects
    built = [{"".join(list(k)): v for k, v in e.items()} for e in orjson.loads(text)]  # fresh, equal keys
    assert not any(k is q for k in built[0] for q in keys)
    _assert_same(scan.scan_events(parsed), scan.scan_events_python(built))
    _assert_same(scan.scan_events(built), scan.scan_events_python(built))
    assert len(scan.scan_events(parsed).by_correlation) == 1 and scan.scan_events(parsed).flow_indices == [1]
    for module in (scan._cscan, validate._cvalidate, flows._cflows):
        with pytest.raises(TypeError):
            module.use_keys([("ph", 0)])
