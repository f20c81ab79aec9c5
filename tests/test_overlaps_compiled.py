"""The sorts over the scan's columns compiled (loading/_coverlaps.c: which threads cannot nest, which slices
begin together, which begin at given points) answer as their numpy forms in scan.TraceScan do, on real
traces and on generated columns; they are built wherever a C compiler is."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading import scan
from tests.conftest import arguments_of, real_traces

pytestmark = pytest.mark.skipif(scan._coverlaps is None and not (shutil.which("cc") or shutil.which("gcc")),
                                reason="no C compiler here: the sorts run in numpy only")


def test_the_compiled_sorts_are_built():
    assert scan._coverlaps is not None, ("pip install built no kineto_sql.loading._coverlaps although a C "
                                         "compiler is here")


def _scan(rows: list[tuple[int, int, int, int]], int64: bool = True) -> scan.TraceScan:
    """A scan of slice-pushing events (track, ts, dur, placed) in file order; `int64` False makes its
    sorts take the numpy forms."""
    columns = [np.array(column, dtype=np.int64) for column in zip(*rows)] if rows else [np.zeros(0, np.int64)] * 4
    track, ts, dur, placed = columns
    return scan.TraceScan([], {}, [], np.arange(len(ts), dtype=np.int64), track, ts, -dur, placed, {}, [], [],
                          int64_columns=int64)


def _same_answers(rows, points) -> scan.TraceScan:
    compiled, numpy_form = _scan(rows), _scan(rows, int64=False)
    assert compiled.compiled_columns() and not numpy_form.compiled_columns()
    assert compiled.unnested_threads() == numpy_form.unnested_threads()
    assert compiled.shared_begins() == numpy_form.shared_begins()
    assert compiled.begins_at(points) == numpy_form.begins_at(points)
    return compiled


# slice-pushing events as (track, start, duration, placed), in file order
_ROWS = st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 20), st.integers(0, 8), st.integers(0, 1)), max_size=30)


@settings(max_examples=400, deadline=None)
@given(_ROWS, st.sets(st.tuples(st.integers(0, 4), st.integers(-6, 21)), max_size=6))
def test_the_same_answers_as_numpy_for_any_columns(rows, points):
    _same_answers(rows, points)


def test_a_crossing_pair_does_not_nest_and_touching_or_nested_ones_do():
    crossing = _same_answers([(0, 0, 10, 1), (0, 5, 10, 1), (1, 0, 10, 1), (1, 10, 5, 1)], {(0, 5)})
    # thread 0 is handed to the lanes with its events in lane order; thread 1 (touching) stays
    assert crossing.unnested_threads() == [(0, 0, [(0, -10, 0), (5, -10, 1)])]
    nested = _same_answers([(0, 0, 10, 1), (0, 2, 3, 1), (0, 2, 8, 1), (0, 2, 0, 0)], {(0, 2), (0, 7)})
    assert nested.unnested_threads() == []
    assert nested.shared_begins() == {1, 2, 3}
    assert nested.begins_at({(0, 2), (0, 7)}) == [(1, 0, 2), (2, 0, 2), (3, 0, 2)]
    # an event not placed (an instant) is in no lane, so it cannot cross anything
    assert _same_answers([(0, 0, 10, 1), (0, 5, 10, 0)], set()).unnested_threads() == []


def test_a_point_beyond_int64_is_left_to_the_numpy_form():
    columns = _scan([(0, 1, 1, 1)])
    assert scan._coverlaps.begins_at(columns.push_index, columns.push_track, columns.push_ts, {(0, 2**64)}) is None
    assert columns.begins_at({(0, 2**64), (0, 1)}) == [(0, 0, 1)]


def test_columns_of_another_type_are_refused():
    with pytest.raises(TypeError):
        scan._coverlaps.shared_begins(np.array([0.0]), np.array([0.0]), np.array([1.0]))
    with pytest.raises(ValueError):
        scan._coverlaps.shared_begins(np.zeros(2, np.int64), np.zeros(1, np.int64), np.zeros(2, np.int64))


@pytest.mark.parametrize("path", real_traces("hta_critical_path_alexnet.json.gz", "tl_h100_bert_small.json.gz",
                                              "hta_trace_diff_control.json.gz", start=2), ids=lambda p: p.name)
def test_the_same_answers_on_real_traces(monkeypatch, path):
    (events,) = arguments_of(monkeypatch, "scan_events", path)
    compiled = scan.scan_events(events)
    assert compiled.compiled_columns() and len(compiled.push_ts) > 0
    python = scan.scan_events_python(events)
    python.int64_columns = False  # (its columns are numpy int64 arrays: this sends it to the numpy forms)
    points = {(track, ts) for track, ts in zip(compiled.flow_tracks, (compiled.ts_ns[j] for j in compiled.flow_indices))
              if ts is not None}
    assert compiled.unnested_threads() == python.unnested_threads()
    assert compiled.shared_begins() == python.shared_begins()
    assert compiled.begins_at(points) == python.begins_at(points)


def test_a_thread_written_out_of_time_order_is_sorted_all_the_same():
    # Kineto writes a thread as a few runs in time order; one written backwards is a run per event, which
    # the compiled merge sort takes the most passes over
    backwards = [(0, 3 * (999 - k), 2, 1) for k in range(1000)] + [(1, 5, 3, 1), (0, 10, 4, 1)]
    compiled = _same_answers(backwards, {(0, 9), (0, 10)})
    ((first, track, items),) = compiled.unnested_threads()
    assert (first, track) == (0, 0) and [ts for ts, _, _ in items] == sorted(ts for ts, _, _ in items)
