"""How Perfetto v52's JSON importer sees one event: its nanosecond times, its thread, its sort position."""
from __future__ import annotations

import math


def ns(value) -> int | None:
    """Perfetto v52's reading of a timestamp: microseconds (number or numeric string) to integer
    nanoseconds, the double times 1000 rounded half up (floor(x * 1000 + 0.5), measured on the engine:
    1.0005 -> 1001 and 2.0025 -> 2003, where Python's round() gives 1000 and 2002). Only sub-nanosecond
    digits can tell the two apart, and there the engine's rule decides what nests."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return math.floor(value * 1000 + 0.5) if math.isfinite(value) else None
    return None


def engine_tid(e: dict):
    """The importer gives an event with tid 0 or no tid the thread `tid := pid` (when pid is not 0)."""
    tid = e.get("tid")
    pid = e.get("pid")
    return pid if (not tid and pid) else tid


def pushes_slice(e: dict) -> bool:
    """Events that become a slice on their thread's stack: X, and thread-scoped instants."""
    ph = e.get("ph")
    return ph == "X" or (ph in ("i", "I") and e.get("s", "t") == "t")


def sort_key(e: dict, index: int, ts: int) -> tuple:
    """The TraceSorter order at equal ts: X by longer duration first, then everything else in file order."""
    if e.get("ph") == "X":
        return (ts, 1, -(ns(e.get("dur")) or 0), index)
    return (ts, 2, 0, index)
