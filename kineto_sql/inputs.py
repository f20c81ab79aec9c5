"""Checks on what a command is pointed at, before anything opens it: one sentence each, never a traceback
or a hang.

- A file name that is not UTF-8 (`caf\\xe9.json.gz`, written by a Latin-1 shell): Python keeps its bytes as
  surrogates, which no JSON, SQL or terminal text can hold; refused with the name shown escaped.
- Something that is not a regular file (a FIFO, a device, a socket): reading it may never end, and it cannot
  be a saved trace; refused before it is opened (opening a FIFO for reading blocks until a writer comes).
- In a directory of rank traces, an entry named like a trace that the directory listing leaves out (a
  symbolic link to a missing file or to a directory, a FIFO) or whose name is not UTF-8: named, as a rank
  file that was not loaded, so that no rank goes missing without a word.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from kineto_sql.errors import TraceInputError

TRACE_SUFFIXES = (".json", ".json.gz")


def shown(path) -> str:
    """A path as text a terminal and JSON can hold: bytes that are not UTF-8 become \\xNN."""
    return one_line(os.fsencode(os.fspath(path)).decode("utf-8", "backslashreplace"))


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7f)}
_CONTROL.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def one_line(text: str) -> str:
    """`text` as one line of a terminal: control characters (a newline in a file name, an escape sequence)
    and lone surrogates (a name that is not UTF-8) are written as escapes."""
    text = str(text).translate(_CONTROL)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") \
        if any("\udc80" <= ch <= "\udcff" for ch in text) else text


def name_problem(path, output: bool = False) -> str | None:
    try:
        os.fsencode(os.fspath(path)).decode("utf-8")
    except UnicodeDecodeError:
        if output:
            return f"{shown(path)}: the file name is not valid UTF-8; write to a UTF-8 (or plain ASCII) name"
        return (f"{shown(path)}: the file name is not valid UTF-8; rename it to a UTF-8 (or plain ASCII) name, "
                "e.g. with convmv -f latin1 -t utf8")
    return None


def kind_problem(path) -> str | None:
    """Why `path` cannot be read as a trace file or a directory without opening it, or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{shown(path)} is a symbolic link loop; point at the trace file itself"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR) and os.path.islink(path):
            target = os.readlink(path)
            return f"{shown(path)} is a symbolic link to {shown(target)}, which does not exist; fix the link"
        return None  # missing or unreadable: the loader says so in its own sentence
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    what = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return (f"{shown(path)} is {what}, not a regular file: reading it may never end; save the trace to a file "
            "first")


def check_input(path) -> None:
    """Refuses, with one sentence, a trace or directory argument no command could read."""
    if path is None or "://" in str(path):
        return
    problem = name_problem(path) or kind_problem(path)
    if problem:
        raise TraceInputError(problem)


def rank_dir_entries(directory, listed) -> tuple[list, list[tuple[str, str]]]:
    """`listed` (the loader's (path, rank) pairs for `directory`) without the entries no load could read,
    and those entries, with every trace-named entry the listing left out, as (path, sentence)."""
    kept, refused = [], []
    for path, rank in listed:
        problem = name_problem(path) or kind_problem(path)
        if problem:
            refused.append((shown(path), problem))
        else:
            kept.append((path, rank))
    seen = {os.path.normpath(os.fspath(p)) for p, _ in listed}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return kept, refused
    for name in names:
        full = os.path.join(os.fspath(directory), name)
        if not name.endswith(TRACE_SUFFIXES) or os.path.normpath(full) in seen:
            continue
        problem = name_problem(full) or kind_problem(full)
        if problem is None and os.path.isdir(full):
            problem = f"{shown(full)} is a directory (named like a trace file); point the link at the trace file"
        if problem:
            refused.append((shown(full), problem))
    return kept, sorted(refused)
