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
from kineto_sql.loading import lazy_args
from kineto_sql.loading.rawcheck import integer_orjson_rounds

try:  # ISA-L's inflate: the same bytes as zlib's in about 40% of the time (the loader inflates each gzip trace
    # once or, rebased, twice before the engine gets a byte: 34 vs 14 ms on a 35 MB trace)
    from isal import igzip as _gzip
    from isal import isal_zlib as inflate_module
except ImportError:  # (a platform without its wheel: zlib gives the same bytes)
    _gzip, inflate_module = gzip, zlib
INFLATE_ERRORS = (OSError, EOFError, zlib.error, inflate_module.error)

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
            raw = _gzip.decompress(raw)
        except INFLATE_ERRORS:
            raise TraceInputError(
                f"{path} is a corrupt or truncated gzip file; re-copy or re-export the trace") from None
    if not raw.strip():
        raise TraceInputError(f"{path} is empty; it holds no trace events")
    return raw


# A large trace is parsed a piece of its traceEvents at a time: orjson first builds its own document of
# the whole input (about 2x the text) before it makes the Python objects, and on a whole trace that
# transient is the peak of the load. Pieces of this size bound it to about a megabyte, which a core's
# cache holds while the piece's objects are made: the streamed parse of hta_trace_diff_control took
# 0.19-0.21 s with 512 KB pieces against 0.30 s with 4 MB ones, of its 4x replica 0.70 s against
# 0.91-1.02 s (16 MB: 1.2-1.3 s; fresh processes, 2-3 runs each).
PIECE_BYTES = 512 << 10
EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BETWEEN_EVENTS = re.compile(rb'\}\s*,\s*\{')
_AFTER_LAST_EVENT = re.compile(rb'\}\s*\]')
_TRIES = 16


def parse_trace(raw: bytes, path: Path):
    """The parsed document, as parse_json gives it (same objects, same errors)."""
    return parse_trace_probed(raw, path)[0]


def parse_trace_probed(raw: bytes, path: Path) -> tuple[object, bool]:
    """parse_trace, and whether no event nests more than EVENT_DEPTH containers (itself counted). True
    is certain; False means not known (the trace was parsed whole, or some piece is deeper)."""
    if integer_orjson_rounds(raw):
        return parse_exact(raw, path), False
    if len(raw) > 2 * PIECE_BYTES:
        probe = DepthProbe()
        doc = _parse_in_pieces(raw, probe)
        if doc is not None:
            return doc, probe.bounded
    return parse_json(raw, path), False


# The depth the loader needs to know is bounded: an event whose args values a JSON writer can write
# (orjson.dumps refuses 255 levels and more), i.e. event, args and a value of up to 254 levels.
EVENT_DEPTH = 256


def _parse_depth_limit() -> int | None:
    """The deepest nesting orjson.loads accepts (1024 in orjson 3), found by trying; None if it has none
    below 2^16. The probe below rests on that limit, so it is measured rather than assumed."""
    def parses(depth: int) -> bool:
        try:
            orjson.loads(b"[" * depth + b"]" * depth)
            return True
        except orjson.JSONDecodeError:
            return False

    low, high = 1, 1 << 16
    if parses(high):
        return None
    while high - low > 1:  # parses(low) and not parses(high)
        middle = (low + high) // 2
        low, high = (middle, high) if parses(middle) else (low, middle)
    return low


class DepthProbe:
    """Bounds the depth of the events while the pieces are parsed, at no extra cost: a piece parsed as
    `[` * (WRAP + 1) + piece + `]` * (WRAP + 1) within orjson's depth limit has no event deeper than
    limit - WRAP - 1 = EVENT_DEPTH levels. A piece that fails so is parsed as it is (and `bounded` is
    then False); a wrapped parse is used only if each wrapper level holds exactly one value, so it is
    the plain parse's result (a piece that is not one balanced run of values cannot pass that)."""

    _wrap: int | None = None
    _measured = False

    def __init__(self):
        if not DepthProbe._measured:
            limit = _parse_depth_limit()
            DepthProbe._wrap = None if limit is None or limit - 1 - EVENT_DEPTH < 0 else limit - 1 - EVENT_DEPTH
            DepthProbe._measured = True
        self.wrap = DepthProbe._wrap
        self.bounded = self.wrap is not None
        if self.bounded:
            self._open, self._close = b"[" * (self.wrap + 1), b"]" * (self.wrap + 1)

    def loads_items(self, piece: bytes):
        """The values of `piece` as a JSON array's items, or None when it is not a run of whole values."""
        if self.bounded:
            try:
                value = orjson.loads(b"".join((self._open, piece, self._close)))  # (one copy; `+` makes two)
            except orjson.JSONDecodeError:
                value = None
            if value is not None:
                value = _innermost(value, self.wrap)
                if type(value) is list:
                    return value
        items = loads_list(b"[" + piece + b"]")
        if items is not None:
            self.bounded = False
        return items


def _innermost_python(value, levels: int):
    """value[0][0]...[0] (`levels` times) when each of those levels is a list of exactly one item, else None."""
    for _ in range(levels):
        if type(value) is not list or len(value) != 1:
            return None
        value = value[0]
    return value


try:  # the walk above, compiled (a piece's ~767 wrapper levels, for every piece); absent without a C compiler
    from kineto_sql.loading._crawcheck import innermost as _innermost
except ImportError:
    _innermost = _innermost_python


def loads_list(text: bytes):
    """The values of `text` as a JSON array's items, or None when it is not a sequence of whole values."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _parse_in_pieces(raw: bytes, probe: DepthProbe | None = None):
    """{...,"traceEvents": [events], ...} parsed as its events' pieces plus the rest; None when the text
    does not split cleanly (then the caller parses it whole, and reports any error as parse_json does).

    A piece is cut after a `}` followed by `, {`; `[` + piece + `]` parses only if the cut is between two
    whole events of the array (a cut inside an event leaves an object or a string open). The rest of the
    document, with the array emptied, must parse to an object whose traceEvents is that empty array, so
    the array really was the document's own traceEvents."""
    key = EVENTS_KEY.search(raw)
    if key is None:
        return None
    events, pos, size = [], key.end(), len(raw)
    while pos + PIECE_BYTES < size:
        found = first_events(raw, pos, probe)
        if found is None:
            break
        part, _, pos = found
        events.extend(part)
    found = last_events(raw, pos, probe)
    if found is None:
        return None
    part, after = found
    rest = loads_list(raw[:key.start()] + b'"traceEvents":[]' + raw[after:])
    if type(rest) is not dict or rest.get("traceEvents") != []:
        return None
    events.extend(part)
    rest["traceEvents"] = events
    return rest


def first_events(text: bytes, start: int, probe: DepthProbe | None, fix=None, texts: list | None = None):
    """The first run of whole events of `text` from `start` (the `{` of an event) that is at least
    PIECE_BYTES long: (its events, the piece parsed, the index of the `{` that follows it), or None when
    no cut within _TRIES tries parses. `fix(piece, start)`, when given, is the text parsed instead of the
    piece (the streamed parse rebases each piece before its parse). `texts`, when given, has the events'
    args kept as text (lazy_args.parse_cut) and collects what is left to check of them."""
    search_from = start + PIECE_BYTES
    for _ in range(_TRIES):
        cut = _BETWEEN_EVENTS.search(text, search_from)
        if cut is None:
            return None
        piece = text[start:cut.start() + 1]
        if fix is not None:
            piece = fix(piece, start)
        part = _items(piece, probe, texts)
        if part is not None:
            return part, piece, cut.end() - 1
        search_from = cut.end()
    return None


def last_events(text: bytes, start: int, probe: DepthProbe | None, texts: list | None = None):
    """The events from `start` up to the `]` that closes the event list: (the events, the index just
    after that `]`), or None when no `]` within _TRIES tries ends a run of whole events. `texts`: as
    first_events'."""
    search_from = start
    for _ in range(_TRIES):
        end = _AFTER_LAST_EVENT.search(text, search_from)
        if end is None:
            return None
        part = _items(text[start:end.start() + 1], probe, texts)
        if part is not None:
            return part, end.end()
        search_from = end.end()
    return None


def _items(piece: bytes, probe: DepthProbe | None, texts: list | None = None):
    if texts is not None:
        return lazy_args.parse_cut(piece, lambda text: _items(text, probe), texts)
    return loads_list(b"[" + piece + b"]") if probe is None else probe.loads_items(piece)


def _refuse_constant(name: str):
    raise ValueError(name)


def parse_exact(raw: bytes, path: Path):
    """The document with every integer exact (the stdlib's parse: orjson rounds those beyond 64 bits to
    floats), or parse_json's error for a text that is not JSON (NaN and Infinity included, as orjson)."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return parse_json(raw, path)


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
