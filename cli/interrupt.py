"""Ctrl-C ends a command even while a query runs inside the wasm engine.

Python runs a signal handler only between bytecodes of the main thread, and a query runs inside one call
into the engine's machine code (wasmtime through ctypes, which releases the GIL), so a runaway query
(`WITH RECURSIVE` without an end) ignored Ctrl-C for as long as it ran. Here the signal's C-level handler
also writes its number to a socket (signal.set_wakeup_fd); a watcher thread reads it and gives the main
thread a moment to raise KeyboardInterrupt itself (it does whenever it is running Python: the command then
ends through friendly_errors, one line and exit 130). If the main thread is still inside the engine after
that, the watcher says the same line and ends the process with status 130. Outputs are written atomically
(kineto_sql/outputs.py), so nothing is left half-written either way.

(wasmtime's epoch interruption would trap the query instead, but the checks it compiles into every loop cost
about 50% more CPU on a recursive query, measured; this costs nothing until Ctrl-C.) Installed by the
console script only, from the main thread, and only when nothing else (an event loop) owns the wakeup fd.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading

GRACE_S = 1.0
MESSAGE = b"error: interrupted (Ctrl-C)\n"
_handled = threading.Event()


def handled() -> None:
    """The main thread took the interrupt (and says so itself)."""
    _handled.set()


def install() -> bool:
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False  # SIGINT ignored (a background job) or handled by someone else: leave it so
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):
        reader.close()
        writer.close()
        return False
    if previous != -1:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
        return False
    threading.Thread(target=_watch, args=(reader, writer), name="kineto-sql-interrupt", daemon=True).start()
    return True


def _watch(reader: socket.socket, writer: socket.socket) -> None:
    while True:
        try:
            data = reader.recv(64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data and not _handled.wait(GRACE_S):
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.write(2, MESSAGE)
            os._exit(130)
