"""The overlap check compiled (loading/_coverlaps.c) answers as prepare._nests does, for every thread, and
is built wherever a C compiler is."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading import prepare

pytestmark = pytest.mark.skipif(prepare._coverlaps is None and not (shutil.which("cc") or shutil.which("gcc")),
                                reason="no C compiler here: the overlap check runs in Python only")


def test_the_compiled_overlap_check_is_built():
    assert prepare._coverlaps is not None, ("pip install built no kineto_sql.loading._coverlaps although a C "
                                            "compiler is here")


# threads of X events as (start, duration), in any order: sorted below into lane order as the split does
_THREADS = st.lists(st.lists(st.tuples(st.integers(-5, 20), st.integers(0, 8)), max_size=9), min_size=1, max_size=5)


@settings(max_examples=400, deadline=None)
@given(_THREADS)
def test_the_same_answer_as_the_python_loop_for_every_thread(threads):
    starts, ends, firsts, stops = [], [], [], []
    for events in threads:
        firsts.append(len(starts))
        for start, dur in sorted(events, key=lambda e: (e[0], -e[1])):
            starts.append(start * 1000)
            ends.append((start + dur) * 1000)
        stops.append(len(starts))
    start_column, end_column = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
    python = [prepare._nests(starts, ends, first, stop) for first, stop in zip(firsts, stops)]
    assert prepare._coverlaps.nests(start_column, end_column, firsts, stops) == python
    assert prepare._threads_nest(start_column, end_column, firsts, stops) == python
    # object columns (a time beyond int64) take the Python loop
    assert prepare._threads_nest(start_column.astype(object), end_column.astype(object), firsts, stops) == python


def test_a_crossing_pair_does_not_nest_and_touching_ones_do():
    nests = prepare._coverlaps.nests
    assert nests(np.array([0, 5], dtype=np.int64), np.array([10, 15], dtype=np.int64), [0], [2]) == [False]
    assert nests(np.array([0, 10], dtype=np.int64), np.array([10, 15], dtype=np.int64), [0], [2]) == [True]
    assert nests(np.array([0, 2], dtype=np.int64), np.array([10, 10], dtype=np.int64), [0, 1], [1, 2]) == [True, True]
    with pytest.raises(TypeError):
        nests(np.array([0.0]), np.array([1.0]), [0], [1])
