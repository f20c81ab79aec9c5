"""One pass over the events that tells the v52 fixes (overlaps.py, flows.py) where they are needed.

The overlap split needs every X event per thread in time order; the flow binding needs, for every flow
event, its thread and nanosecond time, the slice that carries its correlation, and whether another slice
begins on that thread at that slice's instant. This pass reads each event's fields once into flat lists
(with the nanosecond conversion inlined for the int/float timestamps Kineto writes).

It runs after the pid/tid fixes (ids.py), so the threads it records are the importer's threads.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import floor
from typing import Any

import msgspec

from kineto_sql.loading.decode import UNSET, Raw
from kineto_sql.loading.events import ns

FLOW_PHASES = frozenset(("s", "t", "f"))


class _Correlation(msgspec.Struct):
    """The one field of an X event's args the loader reads (the rest of the text is skipped)."""

    correlation: Any = None


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
    # with a dur (those are the ones the overlap split places).
    push_index: list
    push_track: list
    push_ts: list
    push_negdur: list
    push_placed: list
    # (track number, correlation) -> the index of the X event with that int `correlation` arg, or the
    # list of them when several have it.
    by_correlation: dict
    flow_indices: list
    # track number of each flow event of flow_indices.
    flow_tracks: list

    def unnested_threads(self) -> list[tuple[int, int, list[tuple]]]:
        """The threads whose placed X events cannot all nest (overlaps.py gives them lanes): (lowest event
        index, track number, its X events as (ts, -dur, index) in the order the lanes are filled: by start,
        longer first, then file order), in track order."""
        per_track: dict[int, list] = {}
        for i, track, ts, negdur, placed in zip(self.push_index, self.push_track, self.push_ts, self.push_negdur,
                                                self.push_placed):
            if placed:
                items = per_track.get(track)
                if items is None:
                    per_track[track] = [(ts, negdur, i)]
                else:
                    items.append((ts, negdur, i))
        out = []
        for track in sorted(per_track):
            items = per_track[track]
            items.sort()
            if not nests([t for t, _, _ in items], [t - d for t, d, _ in items], 0, len(items)):
                out.append((min(i for _, _, i in items), track, items))
        return out

    def begins_at(self, points: set) -> list[tuple[int, int, int]]:
        """(index, track, ts) of the slice-pushing events (in file order) whose (track, ts) is in `points`."""
        return [(i, track, ts) for i, track, ts in zip(self.push_index, self.push_track, self.push_ts)
                if (track, ts) in points]

    def shared_begins(self) -> set:
        """Indices of slice-pushing events that begin on the same thread at the same ns as another one."""
        counts = Counter(zip(self.push_track, self.push_ts))
        return {i for i, track, ts in zip(self.push_index, self.push_track, self.push_ts)
                if counts[(track, ts)] > 1}


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


_CORRELATION = msgspec.json.Decoder(_Correlation)  # (a Decoder: a third less per call than json.decode's type lookup)


def correlation_of(args):
    """The `correlation` of an event's args (text or decoded), or None."""
    if type(args) is Raw:
        try:
            return _CORRELATION.decode(args).correlation
        except msgspec.ValidationError:
            return None
    return args.get("correlation") if type(args) is dict else None


def scan_events(events: list) -> TraceScan:
    tracks: list = []
    numbers: dict = {}  # (pid, engine tid) -> track number
    track_of: dict = {}
    ts_ns = [None] * len(events)
    p_index, p_track, p_ts, p_negdur, p_placed = [], [], [], [], []
    with_args = []  # (index, track) of the X events with args
    flow_indices, flow_tracks = [], []
    for i, e in enumerate(events):
        ph = e.ph
        if ph == "X":
            is_x = True
        elif ph in FLOW_PHASES:
            is_x = False
        elif (ph == "i" or ph == "I") and (e.s is UNSET or e.s == "t"):
            is_x = False
        else:
            continue
        pid, tid = e.pid, e.tid
        if pid is UNSET:
            pid = None
        if tid is UNSET:
            tid = None
        raw_key = (pid, tid)
        track = track_of.get(raw_key)
        if track is None:
            key = (pid, pid if (not tid and pid) else tid)
            track = numbers.get(key)
            if track is None:
                track = numbers[key] = len(tracks)
                tracks.append(key)
            track_of[raw_key] = track
        ts = e.ts
        ts = ts * 1000 if ts.__class__ is int else (None if ts is UNSET else fast_ns(ts))
        ts_ns[i] = ts
        if not is_x and ph in FLOW_PHASES:
            flow_indices.append(i)
            flow_tracks.append(track)
            continue
        negdur, placed = 0, False
        if is_x:
            if e.args is not UNSET:
                with_args.append((i, track))
            if ts is None:
                continue
            dur = e.dur
            dur = dur * 1000 if dur.__class__ is int else (None if dur is UNSET else fast_ns(dur))
            if dur is not None:
                negdur, placed = -dur, True
        elif ts is None:
            continue
        p_index.append(i)
        p_track.append(track)
        p_ts.append(ts)
        p_negdur.append(negdur)
        p_placed.append(placed)
    by_correlation: dict = {}
    if flow_indices:  # (the args are read only where a flow may need them)
        for i, track in with_args:
            corr = correlation_of(events[i].args)
            if isinstance(corr, int):
                point = (track, corr)
                have = by_correlation.get(point)
                if have is None:
                    by_correlation[point] = i
                elif have.__class__ is list:
                    have.append(i)
                else:
                    by_correlation[point] = [have, i]
    return TraceScan(tracks, track_of, ts_ns, p_index, p_track, p_ts, p_negdur, p_placed, by_correlation,
                     flow_indices, flow_tracks)
