"""The engine's heap faulted in ahead of its use, on a thread, while the engine parses the trace.

Every page of the wasm heap the engine touches first costs a page fault in the engine's own thread: on
hta_trace_diff_control's 4x replica (112 MB of JSON) ~58k faults, ~0.16 s of the parse and end-of-file
pass, the load's serial tail. One madvise(MADV_POPULATE_WRITE) call makes a range resident at about half
that cost per page, without touching its contents (so it is safe beside the running engine), and, made
from another thread, off that tail.

How far ahead: the engine's heap grows by 2.2-2.7 bytes per byte of JSON fed (resident pages of the heap
above its start, measured on corpus traces from 0.4 to 112 MB), ~0.9 of them while it parses the pieces
and the rest in its end-of-file pass. While the pieces come, the loader's child still holds the trace
(the load's tree of processes peaks at the child's end of preparation), so the heap is faulted in only
PARSE_AHEAD_PER_BYTE times each piece fed, about what the engine takes itself; once the last piece is
in, up to END_AHEAD_PER_BYTE times all of them: never past what the engine will use, so the process ends
with the memory it had and the tree's peak is unchanged. The range starts above the heap the engine had
when started (its request buffer there is never all written). Only where the heap cannot move (the
32-bit build's fixed reservation) and the system has the call (Linux 5.14+); elsewhere nothing.
"""
from __future__ import annotations

import ctypes
import queue
import sys
import threading

PARSE_AHEAD_PER_BYTE = 0.75
END_AHEAD_PER_BYTE = 1.75
_MADV_POPULATE_WRITE = 23
_STEP = 4 << 20  # populated this much per call, so that close() waits for at most one


def _madvise():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


class HeapAhead:
    """`fed(n)` before each n bytes of trace are parsed, `ending()` before the end-of-file pass, `close()`
    before the heap is freed."""

    def __init__(self, base: int, start: int, grow_to):
        self._base, self._mark, self._start = base, start, start
        self._grow_to = grow_to  # (bytes) -> bool: the heap made at least this long (in the engine's thread)
        self._fed = 0
        self._ranges: queue.SimpleQueue = queue.SimpleQueue()
        self._madvise = _madvise()
        self._thread = None
        self._stopped = False

    def fed(self, size: int) -> None:
        self._fed += size
        self._ahead_to(self._start + int(PARSE_AHEAD_PER_BYTE * self._fed))

    def ending(self) -> None:
        self._ahead_to(self._start + int(END_AHEAD_PER_BYTE * self._fed))
        if self._thread is not None:
            self._ranges.put(None)  # (the last range: the thread ends once it is in, not with the engine)

    def _ahead_to(self, target: int) -> None:
        if self._madvise is None:
            return
        target -= target % 4096
        if target <= self._mark or not self._grow_to(target):
            return
        self._ranges.put((self._mark, target))
        self._mark = target
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="kineto-sql engine heap", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        madvise, base = self._madvise, self._base
        while True:
            item = self._ranges.get()
            if item is None:
                return
            begin, end = item
            for at in range(begin, end, _STEP):
                if self._stopped:
                    return
                if madvise(base + at, min(_STEP, end - at), _MADV_POPULATE_WRITE) != 0:
                    self._madvise = None  # (an old kernel: EINVAL; the engine faults its pages in itself)
                    return

    def close(self) -> None:
        """Stops the thread (after the call it is in: at most _STEP bytes)."""
        self._madvise, self._stopped = None, True
        if self._thread is not None:
            self._ranges.put(None)
            self._thread.join()
            self._thread = None
