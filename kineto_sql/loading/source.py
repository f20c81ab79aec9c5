"""Finding and reading trace files: `.json`, `.json.gz`, a bare event array, or a directory of rank traces.

Every way an input can be wrong ends here as a TraceInputError with one sentence that says what to do.
"""
from __future__ import annotations

import errno
import gzip
import mmap
import os
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.errors import TraceInputError

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


# A gzip trace is inflated this many bytes at a time, and `check` (the memory check of the load: a cap on
# what this much JSON will need) asked each time, so a small file that inflates past memory (a "gzip bomb")
# is refused with the need and the limit after a few blocks, not once memory is full.
INFLATE_BLOCK = 32 << 20


def read_bytes(path: Path, check=None, mapped: bool = False):
    """The uncompressed bytes of one trace file. `check(bytes of JSON so far)` raises where the load of that
    much JSON would not fit (engine.memory.check): asked of a plain file's size before it is read, and of a
    gzip file's inflated bytes after every INFLATE_BLOCK of them.

    `mapped`: a plain file is mapped (a read-only `mmap`, its pages mapped up front) rather than copied: the
    page cache is used as it is, where a read makes a fault and a copy per 4 KB page (~55 ms of CPU on a
    112 MB trace). A file cut short while mapped ends the process with SIGBUS, so only the loader child
    maps (background.py says that death in one sentence); a gzip file is inflated either way."""
    info = _stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise TraceInputError(f"{path} is a directory; pass one trace file, or use a command that takes a rank directory")
    if not stat.S_ISREG(info.st_mode):
        # /dev/zero, a FIFO, a socket: reading it may never end, and it cannot be a saved trace.
        raise TraceInputError(f"{path} is not a regular file (a device, pipe or socket); save the trace to a file first")
    try:
        with path.open("rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
            if check is not None and not gzipped:
                check(info.st_size)  # a plain file too large to load is refused before it is read
            raw = _mapped(f) if mapped and not gzipped and info.st_size else None
            if raw is None:
                f.seek(0)
                raw = f.read()
    except OSError as exc:
        raise TraceInputError(f"{path}: cannot read it ({exc.strerror}); check its permissions") from None
    if gzipped:
        try:
            raw = _inflate(raw, check)
        except INFLATE_ERRORS:
            raise TraceInputError(
                f"{path} is a corrupt or truncated gzip file; re-copy or re-export the trace") from None
    if _CONTENT.search(raw) is None:
        raise TraceInputError(f"{path} is empty; it holds no trace events")
    return raw


def _mapped(f):
    try:
        return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE | _POPULATE, prot=mmap.PROT_READ)
    except (OSError, ValueError):  # (a file system that cannot map: read it)
        return None


_CONTENT = re.compile(rb"\S")  # (bytes.strip's whitespace is regex \s in bytes mode; a map has no strip)
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def _inflate(data: bytes, check) -> bytes:
    """Every gzip member of `data` inflated, `check` asked every INFLATE_BLOCK bytes; EOFError if truncated."""
    if check is None:
        return _gzip.decompress(data)
    blocks, total = [], 0
    inflate = inflate_module.decompressobj(wbits=31)
    while True:
        block = inflate.decompress(data, INFLATE_BLOCK)
        if block:
            blocks.append(block)
            total += len(block)
            check(total)
        if inflate.eof:
            data = inflate.unused_data
            if not data:
                return b"".join(blocks)
            if data[:2] != b"\x1f\x8b":
                raise EOFError("trailing data after the last gzip member")
            inflate = inflate_module.decompressobj(wbits=31)
            continue
        data = inflate.unconsumed_tail
        if not data and not block:
            raise EOFError("the gzip stream ends before its end mark")


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
