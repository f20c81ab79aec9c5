"""A forked process that reports down a pipe, and its end: what the loader child and its facts helper share."""
from __future__ import annotations

import multiprocessing
import os
import signal

try:
    from fcntl import F_SETPIPE_SZ, fcntl
except ImportError:  # (not Linux: the pipe keeps its size)
    fcntl = None

# The pipe's buffer: 1 MB (Linux's limit for an unprivileged process) rather than 64 KB, so a 35 MB trace
# crosses in ~35 fills instead of ~560, each of which put one side to sleep and woke the other.
PIPE_BYTES = 1 << 20


def start(run, *args):
    """Forks a process that runs `run(*args, writer)` (which must end it with os._exit); gives its pid and
    the pipe's read end (a multiprocessing Connection)."""
    reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
    if fcntl is not None:
        try:
            fcntl(reader.fileno(), F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:  # (a lower limit set by the system: the default size)
            pass
    pid = os.fork()
    if pid == 0:
        reader.close()
        run(*args, writer)  # never returns
    writer.close()
    return pid, reader


def end(pid: int) -> int | None:
    """Waits for the process, killing it first if it still runs; its wait status (None: already reaped)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
        if not done:
            os.kill(pid, signal.SIGKILL)
            done, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return status
