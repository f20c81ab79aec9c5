"""One pass over the events that tells the later fixes where they are needed.

The overlap split needs every X event per thread in time order; the flow binding needs, for every flow
event, its thread and nanosecond time, the slice that carries its correlation, and whether another slice
begins on that thread at that slice's instant. This pass reads each event's fields once (with the
nanosecond conversion inlined for the int/float timestamps Kineto writes) into flat columns; the sorting
and grouping then happen in numpy, so no per-event tuple or dict is built for events that need no fix.

It runs after the pid/tid fixes (remap, tid 0), so the threads it records are the importer's threads.
The loop is also compiled (_cscan.c, the same steps through the C API), which scan_events uses when it
was built; tests/test_scan_compiled.py holds the two to the same columns.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import floor

import numpy as np

from kineto_sql.loading.events import ns

try:  # the loop below, compiled (pyproject's ext-modules); absent where no C compiler built it
    from kineto_sql.loading import _cscan
except ImportError:
    _cscan = None

FLOW_PHASES = frozenset(("s", "t", "f"))


@dataclass
class TraceScan:
    # track number -> (pid, engine tid), numbered in order of first appearance.
    tracks: list
    # (pid, tid) as written -> track number, for the slice-pushing and flow events.
    track_of: dict
    # event index -> its ts in ns, for the slice-pushing and flow events (None for the others).
    ts_ns: list
    # The slice-pushing events (X, thread-scoped i/I) that have a timestamp, in file order (numpy columns):
    # event index, track number, ts ns, -dur ns (0 for instants and an X without dur), and whether it is
    # an X event with a dur (those are the ones the overlap split places).
    push_index: np.ndarray
    push_track: np.ndarray
    push_ts: np.ndarray
    push_negdur: np.ndarray
    push_placed: np.ndarray
    # (track number, correlation) -> the index of the X event with that int `correlation` arg, or the
    # list of them when several have it.
    by_correlation: dict
    flow_indices: list
    # track number of each flow event of flow_indices.
    flow_tracks: list

    def shared_begins(self) -> set:
        """Indices of slice-pushing events that begin on the same thread at the same ns as another one."""
        track, ts = self.push_track, self.push_ts
        if len(ts) < 2:
            return set()
        order = np.lexsort((ts, track))
        same = (track[order][1:] == track[order][:-1]) & (ts[order][1:] == ts[order][:-1])
        shared = np.zeros(len(ts), dtype=bool)
        shared[1:] = same
        shared[:-1] |= same
        return set(self.push_index[order][shared].tolist())


def fast_ns(value):
    """events.ns with the int and float cases Kineto writes inlined (the same values)."""
    kind = value.__class__
    if kind is int:
        return value * 1000
    if kind is float:
        return floor(value * 1000 + 0.5) if value - value == 0 else None  # NaN and inf: not finite
    return ns(value)


def scan_events(events: list[dict]) -> TraceScan:
    if _cscan is not None:
        columns = _cscan.scan(events, fast_ns)
        if columns is not None:
            return _scan_of_buffers(*columns)
    return scan_events_python(events)


def scan_events_python(events: list[dict]) -> TraceScan:
    """The loop _cscan.c compiles, and what it falls back to for events of another shape."""
    tracks: list = []
    numbers: dict = {}  # (pid, engine tid) -> track number
    track_of: dict = {}
    ts_ns = [None] * len(events)
    p_index, p_track, p_ts, p_negdur, p_placed = [], [], [], [], []
    by_correlation: dict = {}
    flow_indices, flow_tracks = [], []
    for i, e in enumerate(events):
        ph = e["ph"]
        if ph == "X":
            is_x = True
        elif ph in FLOW_PHASES:
            is_x = False
        elif (ph == "i" or ph == "I") and e.get("s", "t") == "t":
            is_x = False
        else:
            continue
        pid, tid = e.get("pid"), e.get("tid")
        raw_key = (pid, tid)
        track = track_of.get(raw_key)
        if track is None:
            key = (pid, pid if (not tid and pid) else tid)
            track = numbers.get(key)
            if track is None:
                track = numbers[key] = len(tracks)
                tracks.append(key)
            track_of[raw_key] = track
        ts = e.get("ts")
        ts = ts * 1000 if ts.__class__ is int else fast_ns(ts)
        ts_ns[i] = ts
        if ph in FLOW_PHASES:
            flow_indices.append(i)
            flow_tracks.append(track)
            continue
        negdur, placed = 0, False
        if is_x:
            args = e.get("args")
            if args is not None:
                corr = args.get("correlation")
                if isinstance(corr, int):
                    point = (track, corr)
                    have = by_correlation.get(point)
                    if have is None:
                        by_correlation[point] = i
                    elif have.__class__ is list:
                        have.append(i)
                    else:
                        by_correlation[point] = [have, i]
            if ts is None:
                continue
            dur = e.get("dur")
            dur = dur * 1000 if dur.__class__ is int else fast_ns(dur)
            if dur is not None:
                negdur, placed = -dur, True
        elif ts is None:
            continue
        p_index.append(i)
        p_track.append(track)
        p_ts.append(ts)
        p_negdur.append(negdur)
        p_placed.append(placed)
    return _scan_of(tracks, track_of, ts_ns, p_index, p_track, p_ts, p_negdur, p_placed, by_correlation,
                    flow_indices, flow_tracks)


def _scan_of(tracks, track_of, ts_ns, p_index, p_track, p_ts, p_negdur, p_placed, by_correlation, flow_indices,
             flow_tracks) -> TraceScan:
    return TraceScan(tracks, track_of, ts_ns, np.array(p_index, dtype=np.int64),
                     np.array(p_track, dtype=np.int64), _column(p_ts), _column(p_negdur),
                     np.array(p_placed, dtype=bool), by_correlation, flow_indices, flow_tracks)


def _scan_of_buffers(tracks, track_of, ts_ns, p_index, p_track, p_ts, p_negdur, p_placed, by_correlation,
                     flow_indices, flow_tracks) -> TraceScan:
    """The compiled loop's answer: its p_ columns are int64 buffers (it hands every trace with a value
    outside int64 back to the Python loop, whose column would hold objects)."""
    def column(buffer) -> np.ndarray:
        return np.frombuffer(buffer, dtype=np.int64)

    return TraceScan(tracks, track_of, ts_ns, column(p_index), column(p_track), column(p_ts), column(p_negdur),
                     column(p_placed) != 0, by_correlation, flow_indices, flow_tracks)


def _column(values: list) -> np.ndarray:
    """int64, or Python ints where one does not fit (a numeric-string ts near -2^63 ns with a long dur)."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array(values, dtype=object)
