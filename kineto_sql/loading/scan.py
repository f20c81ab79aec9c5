"""One pass over the events that tells the later fixes where they are needed.

The overlap split needs every X event per thread in time order; the flow binding needs, for every flow
event, its thread and nanosecond time, the slice that carries its correlation, and whether another slice
begins on that thread at that slice's instant. This pass reads each event's fields once (with the
nanosecond conversion inlined for the int/float timestamps Kineto writes) into flat int64 columns; the
sorting and grouping then happen over the columns (_coverlaps.c, else numpy), so no per-event tuple or
dict is built for events that need no fix.

It runs after the pid/tid fixes (remap, tid 0), so the threads it records are the importer's threads.
The loop is also compiled (_cscan.c, the same steps through the C API), which scan_events uses when it
was built; tests/test_scan_compiled.py holds the two to the same columns.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import floor

from kineto_sql.loading.events import ns, orjson_keys
from kineto_sql.loading.lazy_args import ArgsText

try:  # the loop below, compiled (pyproject's ext-modules); absent where no C compiler built it
    from kineto_sql.loading import _cscan
except ImportError:
    _cscan = None
if _cscan is not None:
    _cscan.use_keys(orjson_keys())
try:  # the sorts and groupings over the columns, compiled; absent where no C compiler built it
    from kineto_sql.loading import _coverlaps
except ImportError:
    _coverlaps = None

FLOW_PHASES = frozenset(("s", "t", "f"))


@dataclass
class TraceScan:
    # track number -> (pid, engine tid), numbered in order of first appearance.
    tracks: list
    # (pid, tid) as written -> track number, for the slice-pushing and flow events.
    track_of: dict
    # event index -> its ts in ns, for the slice-pushing and flow events (None for the others).
    ts_ns: list
    # The slice-pushing events (X, thread-scoped i/I) that have a timestamp, in file order: event index,
    # track number, ts ns, -dur ns (0 for instants and an X without dur), and whether it is an X event
    # with a dur, 1 or 0 (those are the ones the overlap split places). Int64 memoryviews from the
    # compiled loop, numpy arrays from the Python one (of objects where a value is beyond int64).
    push_index: object
    push_track: object
    push_ts: object
    push_negdur: object
    push_placed: object
    # (track number, correlation) -> the index of the X event with that int `correlation` arg, or the
    # list of them when several have it.
    by_correlation: dict
    flow_indices: list
    # track number of each flow event of flow_indices.
    flow_tracks: list
    # Every push_ column is int64 (false only for the Python loop's object columns): the compiled sorts apply.
    int64_columns: bool = True

    def compiled_columns(self) -> bool:
        """Whether _coverlaps can read the columns (built, and every column int64)."""
        return _coverlaps is not None and self.int64_columns

    def numpy_columns(self) -> tuple:
        """The five push_ columns as numpy arrays (placed as bool), for the numpy forms of the sorts."""
        import numpy as np  # (here only: the loader child's common path runs the compiled sorts, without numpy)

        index, track, ts, negdur, placed = (np.asarray(c) for c in (self.push_index, self.push_track, self.push_ts,
                                                                     self.push_negdur, self.push_placed))
        return index, track, ts, negdur, placed != 0

    def unnested_threads(self) -> list[tuple[int, int, list[tuple]]]:
        """The threads whose placed X events cannot all nest (prepare's overlap split gives them lanes):
        (lowest event index, track number, its X events as (ts, -dur, index) in the order the lanes are
        filled: by start, longer first, then file order), in track order."""
        if self.compiled_columns():
            return _coverlaps.unnested(self.push_index, self.push_track, self.push_ts, self.push_negdur,
                                       self.push_placed)
        import numpy as np

        index, track, ts, negdur, placed = self.numpy_columns()
        index, track, ts, negdur = index[placed], track[placed], ts[placed], negdur[placed]
        order = np.lexsort((index, negdur, ts, track))
        index, track, ts, negdur = index[order], track[order], ts[order], negdur[order]
        bounds = np.flatnonzero(np.diff(track)).tolist()
        starts, ends = [0] + [b + 1 for b in bounds], [b + 1 for b in bounds] + [len(track)]
        start_list, end_list = ts.tolist(), (ts - negdur).tolist()
        return [(int(index[start:end].min()), int(track[start]),
                 list(zip(ts[start:end].tolist(), negdur[start:end].tolist(), index[start:end].tolist())))
                for start, end in zip(starts, ends) if not nests(start_list, end_list, start, end)]

    def begins_at(self, points: set) -> list[tuple[int, int, int]]:
        """(index, track, ts) of the slice-pushing events (in file order) whose (track, ts) is in `points`."""
        if self.compiled_columns():
            found = _coverlaps.begins_at(self.push_index, self.push_track, self.push_ts, points)
            if found is not None:
                return found
        import numpy as np

        index, track, ts, _, _ = self.numpy_columns()
        # (a time beyond int64 equals no value of an int64 column)
        times = np.array(sorted({t for _, t in points if ts.dtype == object or -2**63 <= t < 2**63}), dtype=ts.dtype)
        if not len(times):
            return []
        at = np.minimum(np.searchsorted(times, ts), len(times) - 1)
        near = np.flatnonzero(times[at] == ts)
        return [row for row in zip(index[near].tolist(), track[near].tolist(), ts[near].tolist()) if row[1:] in points]

    def shared_begins(self) -> set:
        """Indices of slice-pushing events that begin on the same thread at the same ns as another one."""
        if len(self.push_ts) < 2:
            return set()
        if self.compiled_columns():
            return set(_coverlaps.shared_begins(self.push_index, self.push_track, self.push_ts))
        import numpy as np

        index, track, ts, _, _ = self.numpy_columns()
        order = np.lexsort((ts, track))
        same = (track[order][1:] == track[order][:-1]) & (ts[order][1:] == ts[order][:-1])
        shared = np.zeros(len(ts), dtype=bool)
        shared[1:] = same
        shared[:-1] |= same
        return set(index[order][shared].tolist())


def nests(starts: list, ends: list, first: int, stop: int) -> bool:
    """Whether the X events first..stop-1 of one thread (in lane order) all fit on one stack, i.e. the
    overlap split's lane packing would leave them all where they are."""
    stack = []
    for k in range(first, stop):
        ts = starts[k]
        while stack and stack[-1] <= ts:
            stack.pop()
        end = ends[k]
        if stack and end > stack[-1]:
            return False
        stack.append(end)
    return True


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
                corr = args.correlation if args.__class__ is ArgsText else args.get("correlation")
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
    import numpy as np  # (the Python loop's columns: the compiled loop's need no numpy)

    ts, negdur = _column(p_ts), _column(p_negdur)
    return TraceScan(tracks, track_of, ts_ns, np.array(p_index, dtype=np.int64),
                     np.array(p_track, dtype=np.int64), ts, negdur, np.array(p_placed, dtype=np.int64),
                     by_correlation, flow_indices, flow_tracks,
                     int64_columns=ts.dtype == np.int64 and negdur.dtype == np.int64)


def _scan_of_buffers(tracks, track_of, ts_ns, p_index, p_track, p_ts, p_negdur, p_placed, by_correlation,
                     flow_indices, flow_tracks) -> TraceScan:
    """The compiled loop's answer: its p_ columns are int64 buffers (it hands every trace with a value
    outside int64 back to the Python loop, whose column would hold objects), read in place."""
    def column(buffer) -> memoryview:
        return memoryview(buffer).cast("q")

    return TraceScan(tracks, track_of, ts_ns, column(p_index), column(p_track), column(p_ts), column(p_negdur),
                     column(p_placed), by_correlation, flow_indices, flow_tracks)


def _column(values: list):
    """int64, or Python ints where one does not fit (a numeric-string ts near -2^63 ns with a long dur)."""
    import numpy as np

    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array(values, dtype=object)
