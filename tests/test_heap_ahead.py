"""The engine's heap faulted in ahead of its use (engine.heap_ahead): never further than the engine goes
itself, the same tables, and a thread that ends with the engine."""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

from kineto_sql import EngineChoice, KinetoTraceProcessor
from kineto_sql.engine import heap_ahead
from kineto_sql.loading.prepare import prepare_path

TRACE = Path(__file__).resolve().parents[1] / "golden" / "traces" / "optimizer_foreach_planted.json.gz"
COUNTS = ("SELECT (SELECT count(*) FROM slice) AS slices, (SELECT count(*) FROM flow) AS flows, "
          "(SELECT count(*) FROM args) AS args, (SELECT count(*) FROM thread) AS threads")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_POPULATE_WRITE is Linux's")


def _resident_above(instance, start: int) -> int:
    """Bytes of the engine's heap above `start` that are resident now (mincore)."""
    base = ctypes.addressof(instance.memory.data_ptr(instance.store).contents)
    length = instance.memory.data_len(instance.store) - start
    pages = (length + 4095) // 4096
    vector = (ctypes.c_ubyte * pages)()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    assert libc.mincore(base + start, length, vector) == 0, ctypes.get_errno()
    return sum(b & 1 for b in vector) * 4096


def _load(data: bytes, ahead: bool):
    tp = KinetoTraceProcessor(EngineChoice("wasm"))
    instance = tp._backend.instance
    start = instance.memory.data_len(instance.store)
    if not ahead:
        instance._ahead = None
    tp.load_bytes(data)
    return tp, instance, start


def test_the_heap_is_faulted_in_no_further_than_the_engine_goes():
    data = prepare_path(TRACE).data
    plain_tp, plain, plain_start = _load(data, ahead=False)
    ahead_tp, ahead, ahead_start = _load(data, ahead=True)
    try:
        assert ahead._ahead._mark == ahead_start + int(heap_ahead.END_AHEAD_PER_BYTE * len(data)) // 4096 * 4096
        grown, grown_ahead = _resident_above(plain, plain_start), _resident_above(ahead, ahead_start)
        # the engine itself makes ~2.2x the JSON resident; 1.75x of it was faulted in ahead
        assert grown > heap_ahead.END_AHEAD_PER_BYTE * len(data) > 0.5 * grown
        assert grown <= grown_ahead <= grown + (1 << 20)
        assert ahead_tp.df(COUNTS).values.tolist() == plain_tp.df(COUNTS).values.tolist()
    finally:
        plain_tp.close()
        ahead_tp.close()


def test_while_the_pieces_come_the_heap_is_faulted_in_about_as_the_engine_takes_it():
    data = prepare_path(TRACE).data
    tp = KinetoTraceProcessor(EngineChoice("wasm"))
    instance = tp._backend.instance
    start = instance.memory.data_len(instance.store)
    try:
        for at in range(0, len(data), 1 << 20):
            tp._backend.parse(data[at:at + (1 << 20)])
        assert instance._ahead._mark == start + int(heap_ahead.PARSE_AHEAD_PER_BYTE * len(data)) // 4096 * 4096
        tp._backend.notify_eof()
        assert instance._ahead._mark == start + int(heap_ahead.END_AHEAD_PER_BYTE * len(data)) // 4096 * 4096
    finally:
        tp.close()


def test_the_thread_ends_after_the_end_of_file_or_with_the_engine():
    tp, instance, _ = _load(prepare_path(TRACE).data, ahead=True)
    thread = instance._ahead._thread
    thread.join(timeout=30)  # (ended by itself: the end-of-file range was its last)
    assert not thread.is_alive()
    tp.close()
    assert instance._ahead._thread is None

    tp = KinetoTraceProcessor(EngineChoice("wasm"))
    tp._backend.parse(prepare_path(TRACE).data)  # (a load cut short: no end of file)
    thread = tp._backend.instance._ahead._thread
    assert thread.is_alive()
    tp.close()
    assert not thread.is_alive()


def test_a_system_without_the_call_loads_as_before(monkeypatch):
    monkeypatch.setattr(heap_ahead, "_madvise", lambda: None)
    tp, instance, start = _load(prepare_path(TRACE).data, ahead=True)
    try:
        assert instance._ahead._thread is None and instance._ahead._mark == start
        assert tp.df(COUNTS).values.tolist()[0][0] > 0
    finally:
        tp.close()


def test_the_memory64_build_is_left_alone():
    tp = KinetoTraceProcessor(EngineChoice("wasm64"))
    try:
        assert tp._backend.instance._ahead is None
    finally:
        tp.close()
