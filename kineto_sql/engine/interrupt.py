"""Ctrl-C stops a query that is running inside the wasm engine.

Python runs a signal handler only between bytecodes of the main thread, and a query runs inside one call
into the engine's machine code (wasmtime, through ctypes, which releases the GIL), so a runaway query
(`WITH RECURSIVE` without an end) ignored Ctrl-C. The engines are built with wasmtime's epoch interruption:
compiled code checks the engine's epoch at function entries and loop heads, and traps once it passes the
store's deadline. Here the signal's C-level handler writes its number to a socket (signal.set_wakeup_fd),
a watcher thread reads it and advances the epoch of every engine, the running call traps, and the request
raises KeyboardInterrupt: the command prints one line and exits 130.

Installed only from the main thread and only where no one else (an asyncio loop) already owns the wakeup
fd. A forked child (the query pool, the loader) has no watcher thread; its parent's end ends it.
"""
from __future__ import annotations

import signal
import socket
import threading

_lock = threading.Lock()
_engines: list = []
_interrupted = threading.Event()
_installed = False


def interrupted() -> bool:
    return _interrupted.is_set()


def watch(engine) -> None:
    """Advance `engine`'s epoch on Ctrl-C (its stores must have an epoch deadline set)."""
    with _lock:
        if not any(e is engine for e in _engines):
            _engines.append(engine)
    _install()


def _install() -> None:
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    reader, writer = socket.socketpair()
    reader.setblocking(True)
    writer.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):
        reader.close()
        writer.close()
        return
    if previous != -1:  # someone else's (an event loop): leave it theirs
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
        return
    _installed = True
    threading.Thread(target=_watch, args=(reader, writer), name="kineto-sql-interrupt", daemon=True).start()


def _watch(reader: socket.socket, writer: socket.socket) -> None:
    while True:
        try:
            data = reader.recv(64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data or signal.SIGTERM in data:
            _interrupted.set()
            with _lock:
                for engine in _engines:
                    engine.increment_epoch()
