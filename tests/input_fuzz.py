"""Hostile inputs around the loader: file names, directories of ranks and command lines (the loader's own
fuzzer, tests/test_fuzz_loading.py, mutates the events inside a file).

`layouts()` draws a target: one file, or a directory of rank entries, each with a drawn name (any bytes a
file name may hold: not UTF-8, spaces, newlines, quotes, markup, a leading dot) and a drawn kind (a good
trace, an empty or garbage file, a symbolic link to a missing file, to a directory or to a good trace, a
FIFO, a folder named like a trace). `commands()` draws the command run on it. `check()` runs the console
script and holds it to the rules every command keeps: it ends (no hang), with status 0, 1 or 2; stderr is
progress lines plus `error:` / `warning:` sentences, never a traceback; no temporary file is left; in a
directory, every entry named like a trace is either reported or named in an error.

Used by tests/test_fuzz_inputs.py (a seeded run in CI) and bench/fuzz_inputs.py (a longer run).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from kineto_sql import inputs

KINETO_SQL = str(Path(sys.executable).with_name("kineto-sql"))
TRACE_SUFFIXES = (b".json", b".json.gz")
# The lines a command writes to stderr that are neither progress nor a problem: `sql`'s row count.
INFORMATION = re.compile(r"^\d+ rows?$")
KINDS = ("good", "good", "empty", "garbage", "truncated_gzip", "broken_link", "link_to_dir", "link_to_good",
         "fifo", "folder", "link_loop")
COMMANDS = (("info",), ("sql", "SELECT count(*) FROM slice"), ("diagnose", "--jobs", "1"),
            ("diagnose", "--format", "markdown", "--jobs", "1"), ("fleet", "--parts", "hta"))
# The bytes a file name may hold (no slash, no NUL), weighted towards the ones that broke things.
_NAME_BYTES = st.one_of(st.sampled_from([b"\xe9", b"\xff", b" ", b"\n", b"'", b'"', b"<", b">", b"`", b"|", b"$",
                                         b"\\", b"%", b"*", b"?", b"[", b"-", b"\xc3\xa9", b"\xe2\x80\xae"]),
                        st.binary(min_size=1, max_size=1).filter(lambda b: b not in (b"/", b"\0")))


@dataclass(frozen=True)
class Entry:
    stem: bytes
    suffix: bytes
    kind: str
    rank: int

    @property
    def name(self) -> bytes:
        return b"rank%d_" % self.rank + self.stem + self.suffix


@dataclass(frozen=True)
class Layout:
    single: bool
    entries: tuple[Entry, ...]


@st.composite
def entries(draw, rank: int) -> Entry:
    stem = b"".join(draw(st.lists(_NAME_BYTES, min_size=0, max_size=6)))
    suffix = draw(st.sampled_from(TRACE_SUFFIXES + (b".txt",)))
    return Entry(stem, suffix, draw(st.sampled_from(KINDS)), rank)


@st.composite
def layouts(draw) -> Layout:
    single = draw(st.booleans())
    count = 1 if single else draw(st.integers(1, 4))
    drawn = tuple(draw(entries(rank)) for rank in range(count))
    return Layout(single, drawn)


def commands():
    return st.sampled_from(COMMANDS)


def _good_trace(rank: int) -> bytes:
    from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep

    trace = KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=1000), CpuOp("aten::mm", ts_us=10, dur_us=100),
                         Launch(correlation=1, ts_us=20, dur_us=8), Kernel(correlation=1, ts_us=50, dur_us=30)])
    trace.metadata["distributedInfo"] = {"rank": rank, "world_size": 8}
    import gzip
    import json

    return gzip.compress(json.dumps(trace.to_json()).encode())


def build(layout: Layout, root: Path) -> bytes:
    """Makes the layout under `root` and returns the target path (bytes: names need not be UTF-8)."""
    base = os.fsencode(root)
    folder = os.path.join(base, b"ranks")
    os.mkdir(folder)
    os.mkdir(os.path.join(base, b"a_folder"))
    good = os.path.join(base, b"good.json.gz")
    with open(good, "wb") as f:
        f.write(_good_trace(0))
    for entry in layout.entries:
        path = os.path.join(folder, entry.name)
        if os.path.lexists(path):
            continue
        if entry.kind == "good":
            with open(path, "wb") as f:
                f.write(_good_trace(entry.rank) if entry.suffix == b".json.gz" else
                        __import__("gzip").decompress(_good_trace(entry.rank)))
        elif entry.kind == "empty":
            open(path, "wb").close()
        elif entry.kind == "garbage":
            with open(path, "wb") as f:
                f.write(b'{"traceEvents": [{"ph": "X", "name": \xff\xfe')
        elif entry.kind == "truncated_gzip":
            with open(path, "wb") as f:
                f.write(_good_trace(entry.rank)[:40])
        elif entry.kind == "broken_link":
            os.symlink(os.path.join(base, b"missing.json.gz"), path)
        elif entry.kind == "link_to_dir":
            os.symlink(os.path.join(base, b"a_folder"), path)
        elif entry.kind == "link_to_good":
            os.symlink(good, path)
        elif entry.kind == "link_loop":
            os.symlink(path, path)
        elif entry.kind == "fifo":
            os.mkfifo(path)
        elif entry.kind == "folder":
            os.mkdir(path)
    if layout.single:
        return os.path.join(folder, layout.entries[0].name)
    return folder


@dataclass
class Outcome:
    command: tuple
    target: bytes
    status: int
    seconds: float
    stdout: str
    stderr: str


def run(command: tuple, target: bytes, timeout: float = 120) -> Outcome:
    if command[0] == "fleet" and not os.path.isdir(target):
        command = ("info",)  # fleet takes a directory only
    args = [KINETO_SQL, command[0], target, *command[1:]]
    t0 = time.monotonic()
    done = subprocess.run(args, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return Outcome(tuple(args[1:2]) + command[1:], target, done.returncode, time.monotonic() - t0,
                   done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))


def check(layout: Layout, outcome: Outcome, root: Path) -> None:
    """The rules every command keeps, whatever it was given."""
    where = f"{outcome.command} on {outcome.target!r}: status {outcome.status}\n{outcome.stderr[-3000:]}"
    assert outcome.status in (0, 1, 2), where
    assert "Traceback" not in outcome.stderr and "Traceback" not in outcome.stdout, where
    said = [ln for ln in outcome.stderr.splitlines() if ln.strip() and not ln.startswith("kineto-sql: [")
            and not INFORMATION.match(ln)]
    odd = [ln for ln in said if not ln.startswith(("error: ", "warning: "))]
    assert odd == [], where
    if outcome.status == 2:
        assert len([ln for ln in said if ln.startswith("error: ")]) == 1, where
    assert [str(p) for p in root.rglob("*.tmp")] == [], where
    if not layout.single and outcome.status in (0, 1):
        for entry in layout.entries:
            if not entry.name.endswith(TRACE_SUFFIXES):
                continue
            shown = inputs.shown(entry.name)
            reported = shown in outcome.stdout or any(shown in ln for ln in said)
            # a link to the good trace may be reported under its own rank (the file says rank 0)
            assert reported or entry.kind in ("good", "link_to_good"), f"{shown} is neither reported nor named\n{where}"


def fresh_root() -> Path:
    return Path(tempfile.mkdtemp(prefix="kineto-sql-fuzz-"))


def remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
