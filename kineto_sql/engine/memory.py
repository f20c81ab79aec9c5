"""Will this load fit? An estimate of the memory a load needs, checked against the process's caps first.

Under an address-space cap (`ulimit -v`, `prlimit --as`, common on clusters) or a cgroup memory limit, a
load that does not fit used to end in a traceback (wasmtime: "mmap failed to reserve") or a segfault
(the memory64 engine moving its heap). Refusing up front, with the need and the cap, is the honest answer.

The model, from measurements on the corpus (heap = engine heap after load; JSON = uncompressed bytes):

- parsing: the events as Python objects plus the text on either side peak at about 5x the JSON
  (hta_mtia_single_rank0: 87 MB JSON, +7.0x RSS including a 2.9x heap; tl_h100_owlv2_large: +4.2x);
  freed memory is not always returned to the OS, so it is still counted while the engine loads;
- the engine heap is 3-4x the JSON (2.9x to 3.8x on three corpus traces); the 32-bit build reserves a
  fixed 4 GiB + 64 MiB of address space (wasmtime: "mmap failed to reserve 0x104000000 bytes") that holds it;
- the memory64 build starts with the same reservation and, once the heap outgrows it, moves it: the old
  and the new mapping (heap + 2 GiB of growth room) coexist during the copy: up to 2x the heap + 4 GiB
  (the issue's 1.25 GB trace reserved ~21 GB under a 20 GB cap and crashed; this model says 20.5 GB).

An estimate, not a promise: it errs high, and it is only used to refuse when it clearly exceeds a cap.
"""
from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.errors import EngineError

GIB = 1 << 30
# The engine choice's inputs (engine.processor.EngineChoice.resolve), here so the loader's child reads them
# without importing the engine: above this many bytes of JSON the memory64 engine is chosen.
MEMORY64_ABOVE_BYTES = 1_000_000_000
TP_SHELL_ENV = "KINETO_SQL_TP_SHELL"
PARSE_FACTOR = 5.0
HEAP_FACTOR = 4.0
WASM32_RESERVATION = 0x104000000  # 4 GiB + 64 MiB, what wasmtime reserves per 32-bit memory
GROWTH_ROOM = 2 * GIB


@dataclass(frozen=True)
class Need:
    address_space: int   # bytes of virtual address space at the peak of the load
    resident: int        # bytes of memory actually touched at the peak


def estimate(json_bytes: int, memory64: bool, native: bool = False) -> Need:
    parse = int(PARSE_FACTOR * json_bytes)
    heap = int(HEAP_FACTOR * json_bytes)
    if native:  # a separate trace_processor_shell process: only the parse is ours
        engine_space = 0
    elif not memory64 or heap + GROWTH_ROOM <= WASM32_RESERVATION:
        engine_space = WASM32_RESERVATION
    else:
        engine_space = 2 * heap + 2 * GROWTH_ROOM
    base = _vm_size()
    return Need(address_space=base + parse + engine_space, resident=_rss() + parse + (0 if native else heap))


def check(json_bytes: int, memory64: bool, native: bool = False, what: str = "this trace") -> None:
    """Raises EngineError with one sentence when the estimated need exceeds a cap of this process."""
    need = estimate(json_bytes, memory64, native)
    cap = address_space_cap()
    size = f"{json_bytes / 1e9:.2f} GB" if json_bytes >= 1e9 else f"{json_bytes / 1e6:.1f} MB"
    if cap is not None and need.address_space > cap:
        engine = "the memory64 engine" if memory64 and not native else "the engine"
        raise EngineError(
            f"loading {what} ({size} of JSON) needs about {need.address_space / GIB:.1f} GiB of "
            f"address space ({engine} included) but this process is capped at {cap / GIB:.1f} GiB (ulimit -v / "
            "prlimit --as); raise the cap, or load a shorter capture")
    limit = memory_cap()
    if limit is not None and need.resident > limit[0]:
        raise EngineError(
            f"loading {what} ({size} of JSON) needs about {need.resident / GIB:.1f} GiB of memory "
            f"but {limit[1]} allows {limit[0] / GIB:.1f} GiB; raise the limit, or load a shorter capture")


def address_space_cap() -> int | None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def memory_cap() -> tuple[int, str] | None:
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
