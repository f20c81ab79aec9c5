"""A closed engine is freed: its store (the loaded trace's memory) and the instance go with the close, not
with the process. wasmtime keeps each store's host functions in a global registry until the store is
deleted, and those functions hold the instance that holds the store: without the close dropping the store,
every trace opened in a loop (fleet ranks, `try` over a directory) stayed in memory."""
from __future__ import annotations

import gc
import weakref

import pytest

from kineto_sql import open_trace
from kineto_sql.errors import EngineError
from tests.kineto_builder import Kernel, KinetoTrace, Launch, ProfilerStep


def _trace(tmp_path):
    events = [ProfilerStep(1, ts_us=0, dur_us=1000)]
    for i in range(5):
        events.append(Launch(correlation=i + 1, ts_us=10 + 100 * i, dur_us=8))
        events.append(Kernel(correlation=i + 1, ts_us=50 + 100 * i, dur_us=60))
    return KinetoTrace(events).write(tmp_path)


def test_a_closed_engine_and_its_store_are_freed(tmp_path):
    tp = open_trace(_trace(tmp_path))
    assert tp.rows("SELECT count(*) AS n FROM slice").column("n") == [11]
    instance = tp._backend.instance
    engine, store = weakref.ref(instance), weakref.ref(instance.store)
    tp.close()
    del tp, instance
    gc.collect()
    assert store() is None
    assert engine() is None


def test_a_closed_engine_refuses_a_query_in_one_sentence(tmp_path):
    tp = open_trace(_trace(tmp_path))
    instance = tp._backend.instance
    tp.close()
    with pytest.raises(EngineError, match=r"stopped earlier \(it was closed\)"):
        instance.request(b"")
