"""Preparing a trace in a child process while this one starts the engine and ingests what the child writes.

Preparing is Python work on the parsed events (prepare.py); ingesting is the engine's. In one process they
follow each other and the parsed events share the heap with the engine's tables. Here a forked child reads
and prepares the file and writes the prepared text down a pipe piece by piece; this process meanwhile
creates the engine (as soon as the child has said how large the file is) and feeds it each piece as it
arrives. The events never exist in the process that holds the engine, and the two cores work at once.

This child is the load's one background process. It sends, in order: the input size, then the metadata
and ingest report, then the pieces (read here one ahead, on a thread, while the engine parses the one
before: _ReadAhead), then an end mark with the whole report (the args pass runs on each piece as it is
written: prepare(args_as_written)), then a last word once the child is done (verify()); or, at any
point, the error that stopped it (the same one-sentence TraceInputError a serial load raises). A child
that dies without an end mark is reported as such; nothing half-read is used.

The engine can take no byte before the child has decoded and surveyed every event (each fix may change
any event), so the child's work up to its first piece and the engine's end-of-file pass are the load's
two serial halves; what the child can do per piece (encoding, the args pass) it does while writing.
"""
from __future__ import annotations

import ctypes
import logging
import os
import pickle
import queue
import signal
import threading
import time
from pathlib import Path

from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading import forked
from kineto_sql.loading.prepare import prepare_path


def described(path: Path) -> str:
    """How the memory check names the load of `path`: a gzip file is checked while it is inflated."""
    try:
        with open(path, "rb") as f:
            return f"{path} (inflating it)" if f.read(2) == b"\x1f\x8b" else str(path)
    except OSError:
        return str(path)


def _load_check(path: Path):
    """The memory check of the load (this child and the engine's process) with the default engine choice,
    asked before the decode: of a plain file's size, and as a gzip file inflates (it imports no engine:
    engine.memory alone)."""
    from kineto_sql.engine import memory

    what = described(path)

    def check(size: int) -> None:
        memory.check(size, memory64=size > memory.MEMORY64_ABOVE_BYTES, native=bool(os.environ.get(memory.TP_SHELL_ENV)),
                     what=what, processes=2)
    return check

log = logging.getLogger("kineto_sql.load")

# An unchanged trace is sent as slices of this size (a pipe message is copied whole on both sides).
SLICE_BYTES = 8 << 20
# The child hands its freed heap back to the system (malloc_trim) each time this much text has been
# written since the last time: the events behind it (~17 MB of objects on a GPU trace) are gone, and the
# engine's heap grows meanwhile. Not after every piece: each hand-back makes the pieces after it fault
# their pages in again (prepare.CHUNK_EVENTS).
TRIM_BYTES = 4 << 20
_CONTROL, _PIECE = b"C", b"P"


def available() -> bool:
    return hasattr(os, "fork")


class LoaderDied(KinetoSqlError):
    """The child preparing the trace ended without finishing (killed, out of memory)."""


class StreamedPrepared:
    """A PreparedTrace whose text comes from the child: `size_hint`, `metadata`, `report`, `chunks()`, `data`."""

    def __init__(self, path: Path):
        self.path = path
        self._pid, self._reader = forked.start(_child, path)
        self._size = None
        self._head = None
        self._consumed = False

    # -- what the child says, in order -------------------------------------------------------------

    def _message(self) -> tuple[bytes, bytes]:
        """The child's next message as (tag, body); a piece comes as its tag alone, then its bytes (so
        neither side copies the piece to put the tag before it)."""
        message = self._reader.recv_bytes()
        if message == _PIECE:
            return _PIECE, self._reader.recv_bytes()
        return message[:1], message[1:]

    def _receive(self, read=None):
        """The next message, decoded; `read` gives it raw (default: from the pipe, here and now)."""
        try:
            tag, body = (read or self._message)()
        except (EOFError, OSError):
            self._fail()
        if tag == _PIECE:
            return _PIECE, body
        kind, *values = pickle.loads(body)
        if kind == "error":
            self.close()
            raise values[0]
        return kind, values

    def _fail(self):
        how = self.close()
        if how == f"killed by signal {signal.SIGBUS.value}":  # (a page of the mapped file is gone: source.read_bytes)
            raise LoaderDied(f"{self.path}: the trace file was cut short while it was being read (the process "
                             "preparing it got SIGBUS); load it again once it is written in full")
        raise LoaderDied(f"{self.path}: the process preparing the trace ended before it finished ({how}); "
                         "if memory is short, load it with --jobs 1")

    @property
    def size_hint(self) -> int:
        if self._size is None:
            kind, values = self._receive()
            assert kind == "size", kind
            self._size = values[0]
            log.info("%s", values[1])  # the child's stages, logged here where the CLI shows them
        return self._size

    def _head_values(self):
        if self._head is None:
            self.size_hint  # noqa: B018 - the size comes first
            kind, values = self._receive()
            assert kind == "head", kind
            self._head = values[:2]
            log.info("%s", values[2])
        return self._head

    @property
    def metadata(self) -> dict:
        return self._head_values()[0]

    @property
    def report(self):
        return self._head_values()[1]

    def chunks(self):
        if self._consumed:
            raise RuntimeError("this prepared trace was already written out once")
        self._consumed = True
        self._head_values()
        # Each piece is a fresh 4-8 MB buffer here too, and the engine's feed makes more of that size; as in
        # the child, they are served from memory this process already has. Returned to the system and
        # faulted in again for every piece while the reading thread and the engine's run on two cores, they
        # made the engine's parse calls take 0.57 s instead of 0.43 s on hta_trace_diff_control's 4x
        # replica (medians of 6 alternated CLI-style loads). Set here, not at the fork: set before the
        # imports it made the 35 MB load ~0.1 s slower and its tree PSS 23 MB larger (8 rounds).
        _reuse_freed_buffers()
        ahead = _ReadAhead(self._message)
        ended = False
        try:
            while True:
                kind, body = self._receive(ahead.next)
                if kind != _PIECE:
                    assert kind == "end", kind
                    self._head = [self._head[0], body[0]]
                    ended = True
                    return
                yield body
        finally:
            # (also for a consumer that stopped early: the child ends, so the reading thread ends; after the
            # end mark the child stays, to say whether the args it kept as text are JSON: verify())
            if not ended:
                self.close()
            ahead.stop()
            _give_back_freed_memory()  # before the engine's end-of-file pass, where this process peaks

    def verify(self) -> None:
        """The child's word, after the last piece, on the args its parse kept as text (PreparedTrace.verify):
        the load's error for one that is not JSON."""
        if self._pid is None:
            return
        kind, _ = self._receive()
        assert kind == "checked", kind
        self.close()

    @property
    def data(self) -> bytes:
        data = b"".join(self.chunks())
        self.verify()
        return data

    def close(self) -> str:
        """Ends the child (killing it if it still runs); returns how it ended, in words."""
        if self._pid is None:
            return "already closed"
        self._reader.close()
        pid, self._pid = self._pid, None
        status = forked.end(pid)
        if status is None:
            return "it was already reaped"
        if os.WIFSIGNALED(status):
            return f"killed by signal {os.WTERMSIG(status)}"
        return f"exit status {os.waitstatus_to_exitcode(status)}"

    def __del__(self):
        if getattr(self, "_pid", None):
            self.close()


class _ReadAhead:
    """The child's messages read one ahead, on a thread, while the caller feeds the engine the piece before.

    A pipe holds 64 KB, so read in turn, each piece's transfer waits for the engine to finish parsing the
    one before: on a 35 MB trace the engine's process spent 85-120 ms waiting in recv after the first piece
    (4 fresh CLI-style loads). The read releases the GIL, and so does the engine's parse (a ctypes call into
    wasmtime). One message is held at most (a semaphore, given back as each is taken): a piece, ~4 MB."""

    def __init__(self, read):
        self._read = read
        self._ready: queue.SimpleQueue = queue.SimpleQueue()  # (bounded by the slot)
        self._slot = threading.Semaphore(1)
        self._thread = threading.Thread(target=self._run, name="kineto-sql loader pipe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._slot.acquire()
            try:
                message, failure = self._read(), None
            except BaseException as exc:  # (handed to the caller, which says it)
                message, failure = None, exc
            self._ready.put((message, failure))
            if failure is not None or message[0] != _PIECE:
                return  # the end, the child's error or the pipe's: nothing follows

    def next(self) -> tuple[bytes, bytes]:
        message, failure = self._ready.get()
        self._slot.release()
        if failure is not None:
            raise failure
        return message

    def stop(self) -> None:
        """Lets the thread end (the pipe is closed, or has given its last message) and waits for it."""
        self._slot.release()
        self._thread.join(timeout=30)


def _libc():
    """glibc, or None (another C library, another system: the calls below are then skipped)."""
    global _LIBC
    if _LIBC is None:
        try:
            libc = ctypes.CDLL("libc.so.6")
            _LIBC = libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else False
        except OSError:
            _LIBC = False
    return _LIBC or None


def _give_back_freed_memory() -> None:
    """glibc keeps freed heap pages for reuse; hand them back to the system (no-op elsewhere)."""
    libc = _libc()
    if libc:
        libc.malloc_trim(0)


# mallopt's parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _reuse_freed_buffers() -> None:
    """Lets glibc serve the parse's large buffers from memory it already has.

    By default a buffer above 128 KB (the inflated blocks, the text they are joined into, each piece the
    parse wraps, each piece written out: 4-16 MB each, ~100 MB in all on a 35 MB trace) gets fresh pages
    from the system and gives them back when freed, so every one of its pages faults when first written
    (~2 us a fault on this machine's VM). Served from the heap, and up to 32 MB of freed top kept for the
    next one, the child prepares hta_trace_diff_control with 75k faults instead of 89k and ~36 ms less CPU
    (median 397 against 433 ms). A larger keep (128 MB) saves ~64 ms but leaves ~28 MB more in the child
    at the tree's peak (small allocations land between the freed buffers); 32 MB leaves the peak as it
    was (tree PSS 226 against 230 MB). The writing still hands freed memory back after each piece."""
    libc = _libc()
    if libc:
        libc.mallopt(_M_MMAP_THRESHOLD, 64 << 20)
        libc.mallopt(_M_TRIM_THRESHOLD, 32 << 20)


_LIBC = None


def _child(path: Path, writer) -> None:
    def control(*values):
        writer.send_bytes(_CONTROL + pickle.dumps(values))

    status = 0
    try:
        started = time.perf_counter()
        _reuse_freed_buffers()

        def sized(size: int) -> None:
            control("size", size, f"read {path.name}: {size / 1e6:.1f} MB of JSON")
            _give_back_freed_memory()  # the parse's buffers, kept for its reuse, are all free now

        prepared = prepare_path(path, on_size=sized, check=_load_check(path), mapped=True, args_as_written=True)
        report = prepared.report
        said = (f"prepared {path.name}: {sum(report.events_by_phase.values())} events, {len(report.fixes)} kinds of "
                f"change, {report.dropped_count} dropped ({time.perf_counter() - started:.1f}s, in a child process)")
        control("head", prepared.metadata, report, said)
        unreturned = 0
        for chunk in prepared.chunks():
            view = memoryview(chunk)
            for start in range(0, len(view), SLICE_BYTES):
                writer.send_bytes(_PIECE)
                writer.send_bytes(view[start:start + SLICE_BYTES])
            unreturned += len(view)
            del view, chunk
            if unreturned >= TRIM_BYTES:
                unreturned = 0
                _give_back_freed_memory()
        control("end", prepared.report)  # (whole now: the args pass ran on the pieces as they were written)
        prepared.verify()  # while the engine's process runs its end-of-file pass
        control("checked")
    except KinetoSqlError as exc:
        control("error", exc)
    except BaseException as exc:  # an unexpected failure: say it as a LoaderDied with the cause
        try:
            control("error", LoaderDied(f"{path}: preparing the trace failed: {type(exc).__name__}: {exc}"))
        except BaseException:
            status = 1
    finally:
        try:
            writer.close()
        finally:
            os._exit(status)


# -- started before the command's imports ----------------------------------------------------------

_EARLY: dict[str, tuple[tuple, StreamedPrepared]] = {}


def _identity(path: Path) -> tuple | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _key(path) -> str:
    # realpath, not Path.resolve: a symbolic-link loop must reach read_bytes, which names it in one sentence
    return os.path.realpath(path)


def start_early(path: Path) -> None:
    """Starts preparing `path` now, for a later `open_trace(path, jobs=2)` in this process to take."""
    identity = _identity(path)
    if identity is not None and _key(path) not in _EARLY:
        _EARLY[_key(path)] = (identity, StreamedPrepared(path))


def take(path: Path) -> StreamedPrepared | None:
    """The preparation started early for this very file (same inode, size and mtime), if any."""
    if not _EARLY:
        return None
    entry = _EARLY.pop(_key(path), None)
    if entry is None:
        return None
    identity, streamed = entry
    if identity != _identity(Path(path)):
        streamed.close()
        return None
    return streamed


def cancel_early() -> None:
    """Ends every early preparation nobody took (the command failed first, or opened another file)."""
    while _EARLY:
        _, (_, streamed) = _EARLY.popitem()
        streamed.close()
