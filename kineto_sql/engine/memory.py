"""Will this load fit? An estimate of the memory a load needs, checked against the process's caps first.

Under an address-space cap (`ulimit -v`, `prlimit --as`, common on clusters) or a cgroup memory limit, a
load that does not fit used to end in a traceback (wasmtime: "mmap failed to reserve") or a segfault
(the memory64 engine moving its heap). Refusing up front, with the need and the cap, is the honest answer.

Two models (JSON = uncompressed bytes), each checked once, before the JSON is decoded:

Memory (resident; what a cgroup limit, KINETO_SQL_MEMORY_LIMIT or the machine's available memory bounds):
the load's whole process tree peaks at RESIDENT_BASE (what its processes hold on a one-event trace, or this
process's memory now, less the JSON it holds, if more) plus RESIDENT_FACTOR x the JSON. Measured by bench/memory_model.py (tree PSS
sampled every 100 ms; peak minus the same command's peak on a one-event trace, per byte of JSON) on
hta_trace_diff_control as saved (indented) and as compact replicas, and on the with_stack-heavy
tl_h100_owlv2_large:

  decode in a child, engine here (--jobs 2, the default on 2+ cores):
      control indented 35 MB 4.17x (gzip 4.19x); compact 28 MB 5.37x (the fixed part dominates),
      112 MB 4.42x, 225 MB 4.29x (gzip 4.29x); owlv2 indented 56 MB 3.46x, compact 129 MB 5.21x  -> 5.5x
  one process (--jobs 1):
      control indented 3.52x (gzip 3.57x); compact 4.40x, 3.88x, 3.97x (gzip 4.02x);
      owlv2 indented 3.04x, compact 4.80x                                                       -> 5.0x

Compact JSON (no indentation) costs the most per byte; Kineto's own indented files 15-35% less. The decoded
events and the engine's heap overlap only in part, so the peak is less than their sum (counting both, 9x
plus the decode again as memory in use, refused a 1.14 GB trace that peaks at 3.9 GB under a 9 GiB limit).
Inflating a gzip file adds nothing to the peak: its blocks are freed before the decode (4.19x vs 4.17x).
The peak is the decode's (the child alone: 4.2x), not the engine's: on 1.13 GB of compact JSON (control
x40, the memory64 engine, which moves its heap as it grows) the tree peaked at 4.86 GB (4.20x), the child
at 4.72 GB while decoding, the engine's process at 2.29 GB (2.0x) once the child had gone.

Address space (per process; what `ulimit -v` / `prlimit --as` caps), unchanged from the corpus measurements:
the decode peaks at about 5x the JSON; the 32-bit build reserves a fixed 4 GiB + 64 MiB (wasmtime: "mmap
failed to reserve 0x104000000 bytes") that holds the heap (3-4x the JSON); the memory64 build starts with the
same reservation and, once the heap outgrows it, moves it: the old and the new mapping (heap + 2 GiB of
growth room) coexist during the copy: up to 2x the heap + 4 GiB (a 1.25 GB trace reserved ~21 GB under a
20 GB cap and crashed; this model says 20.5 GB).

An estimate, not a promise: it errs high, and it is only used to refuse when it clearly exceeds a limit.
"""
from __future__ import annotations

import math
import os
import re
import resource
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.errors import EngineError

GIB = 1 << 30
# The engine choice's inputs (engine.processor.EngineChoice.resolve), here so the loader's child reads them
# without importing the engine: above this many bytes of JSON the memory64 engine is chosen.
MEMORY64_ABOVE_BYTES = 1_000_000_000
TP_SHELL_ENV = "KINETO_SQL_TP_SHELL"
PARSE_FACTOR = 5.0   # address space of the decode, per byte of JSON
HEAP_FACTOR = 4.0    # the engine's heap, per byte of JSON (address space)
# Memory the load's process tree adds per byte of JSON (the docstring's measurements, rounded up):
RESIDENT_FACTOR = {1: 5.0, 2: 5.5}   # by the number of processes the load runs in (--jobs)
# What the load's processes hold on a one-event trace (interpreters, imports, an empty engine), measured
# the same way (76 MB in one process, 124 MB in two), rounded up: the least a load needs.
RESIDENT_BASE = {1: 100_000_000, 2: 150_000_000}
MACHINE = "this machine (MemAvailable)"
LIMIT_ENV = "KINETO_SQL_MEMORY_LIMIT"  # a memory limit for the load, as a cgroup's: bytes, or 8G, 1500M
WASM32_RESERVATION = 0x104000000  # 4 GiB + 64 MiB, what wasmtime reserves per 32-bit memory
GROWTH_ROOM = 2 * GIB


@dataclass(frozen=True)
class Need:
    address_space: int   # bytes of virtual address space at the peak of the load
    resident: int        # bytes of memory actually touched at the peak


def estimate(json_bytes: int, memory64: bool, native: bool = False, processes: int = 1) -> Need:
    """The load's peak: this process's address space, and the memory of the load's process tree (the
    `processes` it runs in: 2 where a child decodes, loading.background)."""
    parse = int(PARSE_FACTOR * json_bytes)
    heap = int(HEAP_FACTOR * json_bytes)
    if native:  # a separate trace_processor_shell process: only the parse is ours
        engine_space = 0
    elif not moves(json_bytes, memory64):
        engine_space = WASM32_RESERVATION
    else:
        engine_space = 2 * heap + 2 * GROWTH_ROOM
    base = _vm_size()
    one = processes < 2
    # Checked with the JSON read (or inflated) so far in hand: it is in this process's memory now and in the
    # factor (which counts the text), so it is taken out of the former.
    start = max(_rss() - json_bytes, RESIDENT_BASE[1 if one else 2])
    return Need(address_space=base + parse + engine_space, resident=start + int(RESIDENT_FACTOR[1 if one else 2] * json_bytes))


def moves(json_bytes: int, memory64: bool) -> bool:
    """Whether the memory64 engine's heap outgrows its first reservation on this much JSON (and is copied)."""
    return memory64 and HEAP_FACTOR * json_bytes + GROWTH_ROOM > WASM32_RESERVATION


def check(json_bytes: int, memory64: bool, native: bool = False, what: str = "this trace", processes: int = 1,
          resident: bool = True) -> None:
    """Raises EngineError with one sentence when the estimated need exceeds a limit of this process. Asked
    before the JSON is decoded; `resident` False where the memory was already checked by the process that
    decodes (a second check there would count its decode twice: once in use, once in the need)."""
    need = estimate(json_bytes, memory64, native, processes)
    cap = address_space_cap()
    size = f"{json_bytes / 1e9:.2f} GB" if json_bytes >= 1e9 else f"{json_bytes / 1e6:.1f} MB"
    if cap is not None and need.address_space > cap:
        engine = "the memory64 engine" if memory64 and not native else "the engine"
        raise EngineError(
            f"loading {what} ({size} of JSON) needs about {need.address_space / GIB:.1f} GiB of "
            f"address space ({engine} included) but this process is capped at {cap / GIB:.1f} GiB (ulimit -v / "
            "prlimit --as); raise the cap, or load a shorter capture")
    limit = memory_cap() if resident else None
    if limit is not None and need.resident > limit[0]:
        if limit[1] == MACHINE:
            raise EngineError(
                f"loading {what} ({size} of JSON) needs about {_amount(need.resident)} of memory "
                f"but this machine has {_amount(limit[0], up=False)} available; free memory, load it on a larger "
                f"machine or load a shorter capture ({LIMIT_ENV}=SIZE replaces this check)")
        raise EngineError(
            f"loading {what} ({size} of JSON) needs about {_amount(need.resident)} of memory "
            f"but {limit[1]} allows {_amount(limit[0], up=False)}; raise the limit, or load a shorter capture")


def _amount(size: int, up: bool = True) -> str:
    """A need rounded up, a room rounded down: a refusal never reads "needs 8.0 GiB but allows 8.0 GiB"."""
    unit, digits, name = (GIB, 10, "GiB") if size >= GIB else (1 << 20, 1, "MiB")
    scaled = (math.ceil if up else math.floor)(size / unit * digits) / digits
    return f"{scaled:.1f} {name}" if digits == 10 else f"{scaled:.0f} {name}"


def address_space_cap() -> int | None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def memory_cap() -> tuple[int, str] | None:
    """The tightest of the memory limits on this load: (bytes this process may hold, counting what it holds
    now; what sets it). The cgroup limit, and KINETO_SQL_MEMORY_LIMIT or, where it is not set, the memory
    the machine has available (the setting replaces that one: a user may know of swap or of memory about
    to be freed; no setting lifts a cgroup's limit)."""
    limits = [limit for limit in (_setting_limit() or _available(), _cgroup_limit()) if limit is not None]
    return min(limits, key=lambda limit: limit[0]) if limits else None


def _setting_limit() -> tuple[int, str] | None:
    raw = os.environ.get(LIMIT_ENV, "").strip()
    if not raw:
        return None
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?", raw.upper())
    if not found:
        raise EngineError(f"{LIMIT_ENV}={raw!r} is not a size; write bytes or a size such as 8G or 1500M")
    scale = 1 << (10 * " KMGT".index(found.group(2) or " "))
    return int(float(found.group(1)) * scale), f"{LIMIT_ENV}"


def _available() -> tuple[int, str] | None:
    """What the machine can still give (MemAvailable: free memory plus the caches it can drop)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 + _rss(), MACHINE
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_limit() -> tuple[int, str] | None:
    """The room left under this process's cgroup memory limit (v2 memory.max, v1 memory.limit_in_bytes)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, group = line.split(":", 2)
        if controllers == "":
            files = ("memory.max", "memory.current")
            roots = [Path("/sys/fs/cgroup") / group.lstrip("/"), Path("/sys/fs/cgroup")]
        elif "memory" in controllers.split(","):
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes")
            roots = [Path("/sys/fs/cgroup/memory") / group.lstrip("/"), Path("/sys/fs/cgroup/memory")]
        else:
            continue
        for root in roots:
            try:
                raw = (root / files[0]).read_text().strip()
                used = int((root / files[1]).read_text().strip())
            except (OSError, ValueError):
                continue
            if raw == "max" or int(raw) >= 1 << 62:  # v1 writes "no limit" as a page-rounded 2^63
                break
            return max(int(raw) - used, 0) + _rss(), f"the cgroup memory limit ({root / files[0]})"
    return None


def _status(key: str) -> int:
    try:
        for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _vm_size() -> int:
    return _status("VmSize")


def _rss() -> int:
    return _status("VmRSS")
