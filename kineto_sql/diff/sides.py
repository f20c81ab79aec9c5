"""The two sides of `kineto-sql diff` from its command line: which capture files each side holds.

Grammar (the two-trace form of every diff tool stays as it was):
- `BEFORE AFTER`: two sides; each a trace file, or a directory whose trace files are that side's captures.
- `BEFORE... --vs AFTER...`: any number of entries a side (trace files, directories, quoted globs), so a
  shell glob that expands to many files still lands on one side: `diff main_*.json.gz --vs pr_*.json.gz`.
- one side alone: compared against (or stored as) a --baseline.
Directories are read one level deep, trace files by suffix (.json, .json.gz), sorted by name.
"""
from __future__ import annotations

import glob
from pathlib import Path

from kineto_sql.errors import KinetoSqlError
from kineto_sql.loading.source import TRACE_SUFFIXES

SEPARATOR = "--vs"


def split_sides(tokens) -> tuple[list[Path], list[Path] | None]:
    """(BEFORE's capture files, AFTER's or None when only one side is given)."""
    tokens = list(tokens)
    unknown = [t for t in tokens if t.startswith("-") and t != SEPARATOR]
    if unknown:
        raise KinetoSqlError(f"no such option: {unknown[0]} (see `kineto-sql diff --help`).")
    if tokens.count(SEPARATOR) > 1:
        raise KinetoSqlError(f"{SEPARATOR} separates the two sides: give it once (BEFORE... {SEPARATOR} AFTER...).")
    if SEPARATOR in tokens:
        cut = tokens.index(SEPARATOR)
        left, right = tokens[:cut], tokens[cut + 1:]
        if not left or not right:
            raise KinetoSqlError(f"{SEPARATOR} needs captures on both sides: BEFORE... {SEPARATOR} AFTER...")
        return _files(left, "BEFORE"), _files(right, "AFTER")
    if not tokens:
        raise KinetoSqlError("diff compares BEFORE and AFTER, or one TRACE against --baseline NAME.")
    if len(tokens) == 1:
        return _files(tokens, "the side"), None
    if len(tokens) == 2:
        return _files(tokens[:1], "BEFORE"), _files(tokens[1:], "AFTER")
    raise KinetoSqlError(f"{len(tokens)} traces and no {SEPARATOR}: give several captures a side as "
                         f"BEFORE... {SEPARATOR} AFTER... (or one directory a side).")


def _files(entries: list, side: str) -> list[Path]:
    out: list[Path] = []
    for entry in entries:
        path = Path(entry)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
            if not found:
                raise KinetoSqlError(f"{side}: directory {entry} holds no trace file (*.json, *.json.gz).")
            out += found
        elif path.is_file():
            out.append(path)
        elif glob.has_magic(entry):
            found = sorted(Path(p) for p in glob.glob(entry) if Path(p).is_file())
            if not found:
                raise KinetoSqlError(f"{side}: no file matches {entry}.")
            out += found
        else:
            raise KinetoSqlError(f"{side}: {entry} does not exist.")
    seen = set()
    for path in out:
        key = path.resolve()
        if key in seen:
            raise KinetoSqlError(f"{side}: {path} is given twice; each capture counts once.")
        seen.add(key)
    return out
