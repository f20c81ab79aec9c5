"""Finding and reading trace files: `.json`, `.json.gz`, a bare event array, or a directory of rank traces.

Every way an input can be wrong ends here as a TraceInputError with one sentence that says what to do.
"""
from __future__ import annotations

import errno
import gzip
import json
import os
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

import orjson

from kineto_sql.errors import TraceInputError

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class RankFile:
    """One trace file of a rank directory; `rank` comes from distributedInfo when the file has it."""

    path: Path
    rank_from_name: int | None


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TraceInputError(f"{path} is a symbolic link loop; point at the trace file itself") from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            if path.is_symlink():
                raise TraceInputError(f"{path} is a symbolic link to a missing file; fix the link") from None
            raise TraceInputError(f"{path}: no such file; check the path") from None
        raise TraceInputError(f"{path}: cannot read it ({exc.strerror}); check its permissions") from None


def read_bytes(path: Path) -> bytes:
    """The uncompressed bytes of one trace file."""
    info = _stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise TraceInputError(f"{path} is a directory; pass one trace file, or use a command that takes a rank directory")
    if not stat.S_ISREG(info.st_mode):
        # /dev/zero, a FIFO, a socket: reading it may never end, and it cannot be a saved trace.
        raise TraceInputError(f"{path} is not a regular file (a device, pipe or socket); save the trace to a file first")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceInputError(f"{path}: cannot read it ({exc.strerror}); check its permissions") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error):
            raise TraceInputError(
                f"{path} is a corrupt or truncated gzip file; re-copy or re-export the trace") from None
    if not raw.strip():
        raise TraceInputError(f"{path} is empty; it holds no trace events")
    return raw


# A large trace is parsed a piece of its traceEvents at a time: orjson first builds its own document of
# the whole input (about 2x the text) before it makes the Python objects, and on a whole trace that
# transient is the peak of the load. Pieces of this size bound it to a few MB.
PIECE_BYTES = 4 << 20
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BETWEEN_EVENTS = re.compile(rb'\}\s*,\s*\{')
_AFTER_LAST_EVENT = re.compile(rb'\}\s*\]')
_TRIES = 16


def parse_trace(raw: bytes, path: Path):
    """The parsed document, as parse_json gives it (same objects, same errors)."""
    if len(raw) > 2 * PIECE_BYTES:
        doc = _parse_in_pieces(raw)
        if doc is not None:
            return doc
    return parse_json(raw, path)


def _loads_list(text: bytes):
    """The values of `text` as a JSON array's items, or None when it is not a sequence of whole values."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _parse_in_pieces(raw: bytes):
    """{...,"traceEvents": [events], ...} parsed as its events' pieces plus the rest; None when the text
    does not split cleanly (then the caller parses it whole, and reports any error as parse_json does).

    A piece is cut after a `}` followed by `, {`; `[` + piece + `]` parses only if the cut is between two
    whole events of the array (a cut inside an event leaves an object or a string open). The rest of the
    document, with the array emptied, must parse to an object whose traceEvents is that empty array, so
    the array really was the document's own traceEvents."""
    key = _EVENTS_KEY.search(raw)
    if key is None:
        return None
    events, pos, size = [], key.end(), len(raw)
    while pos + PIECE_BYTES < size:
        search_from, part = pos + PIECE_BYTES, None
        for _ in range(_TRIES):
            cut = _BETWEEN_EVENTS.search(raw, search_from)
            if cut is None:
                break
            part = _loads_list(b"[" + raw[pos:cut.start() + 1] + b"]")
            if part is not None:
                break
            search_from = cut.end()
        if part is None or cut is None:
            break
        events.extend(part)
        pos = cut.end() - 1
    search_from = pos
    for _ in range(_TRIES):
        end = _AFTER_LAST_EVENT.search(raw, search_from)
        if end is None:
            return None
        part = _loads_list(b"[" + raw[pos:end.start() + 1] + b"]")
        if part is not None:
            break
        search_from = end.end()
    else:
        return None
    rest = _loads_list(raw[:key.start()] + b'"traceEvents":[]' + raw[end.end():])
    if type(rest) is not dict or rest.get("traceEvents") != []:
        return None
    events.extend(part)
    rest["traceEvents"] = events
    return rest


def parse_json(raw: bytes, path: Path):
    """Parses JSON with orjson, falling back to the stdlib for integers beyond 64 bits."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "Integer" in str(exc) or "integer" in str(exc):
            try:
                return json.loads(raw)
            except ValueError:
                pass
        truncated = "unexpected end" in str(exc).lower() or "EOF" in str(exc)
        what = "truncated JSON (the file ends mid-event)" if truncated else "not valid JSON"
        where = f" at line {exc.lineno} column {exc.colno} (byte {exc.pos})" if not truncated else ""
        near = raw[max(exc.pos - 20, 0):exc.pos + 20].decode(errors="replace") if not truncated else ""
        hint = " (NaN and Infinity are not JSON numbers)" if any(w in near for w in ("NaN", "Infinity")) else ""
        shown = f" near {near!r}" if near else ""
        raise TraceInputError(
            f"{path} is {what}{where}: {str(exc).split(':')[0]}{shown}{hint}; re-export the trace from "
            "torch.profiler") from None


def trace_files_in(directory: Path) -> list[RankFile]:
    """The rank traces of a directory, as tensorboard_trace_handler writes them (one file per rank)."""
    if not directory.exists():
        raise TraceInputError(f"{directory}: no such directory; check the path")
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    if not files:
        raise TraceInputError(
            f"{directory} holds no trace files (*.json or *.json.gz); point at the folder torch.profiler wrote")
    out = []
    for path in files:
        match = _RANK_IN_NAME.search(path.name)
        out.append(RankFile(path, int(match.group(1)) if match else None))
    return out
