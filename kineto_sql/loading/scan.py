"""One pass over the events that tells the later fixes where they are needed.

The overlap split needs every X event per thread in time order; the flow binding needs, for every flow
event, the slices that begin on its thread at its instant and the slice that carries its correlation.
Both used to walk all events themselves (several passes, a Python `ns()` call per field). This pass
collects all of it once, with the nanosecond conversion inlined for the int/float timestamps Kineto
writes, so a trace that needs no fix pays one loop, and a fix walks only what it changes.

It runs after the pid/tid fixes (remap, tid 0), so the threads it records are the importer's threads.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from kineto_sql.loading.events import ns

FLOW_PHASES = frozenset(("s", "t", "f"))


@dataclass
class TraceScan:
    # (pid, engine tid) -> [(ts ns, -dur ns, index)] of its X events, in file order.
    x_by_track: dict = field(default_factory=dict)
    # (pid, engine tid, ts ns) -> the index of the one slice-pushing event (X, thread-scoped i/I) that
    # begins there, or the list of them when several do.
    begins: dict = field(default_factory=dict)
    # ((pid, engine tid), correlation) -> indices of X events with that int `correlation` arg.
    by_correlation: dict = field(default_factory=dict)
    flow_indices: list = field(default_factory=list)


def fast_ns(value):
    """events.ns with the int and float cases Kineto writes inlined (the same values)."""
    kind = value.__class__
    if kind is int:
        return value * 1000
    if kind is float:
        return round(value * 1000) if value == value else None
    return ns(value)


def scan_events(events: list[dict]) -> TraceScan:
    x_by_track: dict = defaultdict(list)
    begins: dict = {}
    by_correlation: dict = defaultdict(list)
    flow_indices = []
    for i, e in enumerate(events):
        ph = e["ph"]
        if ph == "X":
            pass
        elif ph in FLOW_PHASES:
            flow_indices.append(i)
            continue
        elif not ((ph == "i" or ph == "I") and e.get("s", "t") == "t"):
            continue
        pid, tid = e.get("pid"), e.get("tid")
        track = (pid, pid if (not tid and pid) else tid)
        if ph == "X":
            args = e.get("args")
            if args is not None:
                corr = args.get("correlation")
                if isinstance(corr, int):
                    by_correlation[(track, corr)].append(i)
        ts = fast_ns(e.get("ts"))
        if ts is None:
            continue
        point = track + (ts,)
        have = begins.get(point)
        if have is None:
            begins[point] = i
        elif have.__class__ is list:
            have.append(i)
        else:
            begins[point] = [have, i]
        if ph != "X":
            continue
        dur = fast_ns(e.get("dur"))
        if dur is not None:
            x_by_track[track].append((ts, -dur, i))
    return TraceScan(dict(x_by_track), begins, dict(by_correlation), flow_indices)
