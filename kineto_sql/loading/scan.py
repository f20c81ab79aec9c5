"""One pass over the events that tells the v52 fixes (overlaps.py, flows.py) where they are needed.

The overlap split needs every X event per thread in time order; the flow binding needs, for every flow
event, its thread and nanosecond time, the slice that carries its correlation, and whether another slice
begins on that thread at that slice's instant. The scan reads each event's fields once into flat lists
(with the nanosecond conversion inlined for the int/float timestamps Kineto writes).

It is gathered inside validate's loop (`ScanParts`: a loop of its own over every event cost as much as
validate's), by the ids as validated, and numbered by thread once the pid/tid fixes (ids.py) are done
(`ScanParts.finish`), so the threads it records are the importer's threads.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass
from itertools import compress
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
    flow_indices: list
    # track number of each flow event of flow_indices.
    flow_tracks: list
    # () -> by_correlation (read on first need: see there)
    correlate: Any = dict

    @functools.cached_property
    def by_correlation(self) -> dict:
        """(track number, correlation) -> the index of the X event with that int `correlation` arg, or the
        list of them when several have it. Every X event's args are read for it, so it is made only where
        a flow event needs more than the one slice that begins where it sits (flows._intended_and_at_risk)."""
        return self.correlate()

    @functools.cached_property
    def flow_ts(self) -> list:
        """The ts ns of each flow event of flow_indices."""
        return list(map(self.ts_ns.__getitem__, self.flow_indices))

    @functools.cached_property
    def begins_at_flows(self) -> dict:
        """begins_at_times of the flow events' ts."""
        return self.begins_at_times(set(self.flow_ts))

    def begins_at_times(self, at: set) -> dict:
        """ts ns -> the row (in the push_ lists) of the one slice-pushing event that begins then, or the list
        of those rows (in file order) where two or more do, on any threads, for the ts in `at`."""
        out: dict = {}
        get = out.get
        selected = list(map(at.__contains__, self.push_ts))
        for ts, row in zip(compress(self.push_ts, selected), compress(range(len(selected)), selected)):
            have = get(ts)
            if have is None:
                out[ts] = row
            elif have.__class__ is list:
                have.append(row)
            else:
                out[ts] = [have, row]
        return out

    def begun_on(self, rows, track: int) -> list[int]:
        """The event indices of the rows (begins_at_times) on `track`, in file order."""
        push_track, push_index = self.push_track, self.push_index
        return [push_index[row] for row in ((rows,) if rows.__class__ is int else rows) if push_track[row] == track]

    def unnested_threads(self) -> list[tuple[int, int, list[tuple]]]:
        """The threads whose placed X events cannot all nest (overlaps.py gives them lanes): (lowest event
        index, track number, its X events as (ts, -dur, index) in the order the lanes are filled: by start,
        longer first, then file order), in track order."""
        per_track: dict[int, list] = defaultdict(list)
        placed = self.push_placed
        # (the placed events' (ts, -dur, index) rows made by zip, grouped by track in one plain loop)
        for track, item in zip(compress(self.push_track, placed), zip(
                compress(self.push_ts, placed), compress(self.push_negdur, placed), compress(self.push_index, placed))):
            per_track[track].append(item)
        out = []
        for track in sorted(per_track):
            items = per_track[track]
            items.sort()
            if not _rows_nest(items):
                out.append((min(i for _, _, i in items), track, items))
        return out


def _rows_nest(rows: list) -> bool:
    """Whether one thread's X events, as (ts, -dur, index) rows in lane order, all fit on one stack, i.e. the
    overlap split's lane packing would leave them all where they are."""
    stack = [_ABOVE_ALL]  # (a bottom no slice ends after: the top is always there to compare)
    push, pop = stack.append, stack.pop
    top = _ABOVE_ALL
    for ts, negdur, _ in rows:
        while top <= ts:
            pop()
            top = stack[-1]
        top = ts - negdur
        if top > stack[-1]:
            return False
        push(top)
    return True


_ABOVE_ALL = float("inf")


def fast_ns(value):
    """events.ns with the int and float cases Kineto writes inlined (the same values)."""
    kind = value.__class__
    if kind is int:
        return value * 1000
    if kind is float:
        return floor(value * 1000 + 0.5) if value - value == 0 else None  # NaN and inf: not finite
    return ns(value)


CORRELATION = msgspec.json.Decoder(_Correlation)  # (a Decoder: a third less per call than json.decode's type lookup)


def correlation_of(args):
    """The `correlation` of an event's args (text or decoded), or None."""
    if type(args) is Raw:
        try:
            return CORRELATION.decode(args).correlation
        except msgspec.ValidationError:
            return None
    return args.get("correlation") if type(args) is dict else None


class ScanParts:
    """scan_events's lists, filled by validate.validate_and_survey's loop for each event it keeps (the
    code there is this function's loop, on the validated fields); the threads are recorded by their ids as
    validated (`keys`: (pid, tid) -> key number, UNSET kept apart from null) and resolved by `finish`."""

    def __init__(self):
        self.keys: dict = {}
        self.ts_ns: list = []  # per kept event
        # (lists, not int64 arrays: an array's append costs 4x a list's, ~0.08 s of validate's loop on a 112 MB
        # trace; the int objects land in the pools the interned strings' copies freed: the child's peak is the same)
        self.p_index, self.p_key, self.p_ts, self.p_negdur, self.p_placed = [], [], [], [], []
        self.with_args: list = []  # the X events with args: index
        self.with_args_keys: list = []  # and key number
        self.flow_indices, self.flow_keys = [], []

    def finish(self, events: list, final_key=None) -> TraceScan:
        """The TraceScan of `events` (the kept ones, with what the fixes appended). `final_key(pid, tid)`:
        the ids an event written with these (validated) ids has now, when the id fixes changed any."""
        tracks: list = []
        numbers: dict = {}  # (pid, engine tid) -> track number
        track_of: dict = {}
        track_of_key = []
        for pid, tid in self.keys:  # (in order of first appearance: tracks are numbered as scan_events does)
            if final_key is not None:
                pid, tid = final_key(pid, tid)
            if pid is UNSET:
                pid = None
            if tid is UNSET:
                tid = None
            engine = (pid, pid if (not tid and pid) else tid)
            track = numbers.get(engine)
            if track is None:
                track = numbers[engine] = len(tracks)
                tracks.append(engine)
            track_of.setdefault((pid, tid), track)
            track_of_key.append(track)
        same = track_of_key == list(range(len(track_of_key)))
        push_track = self.p_key if same else [track_of_key[k] for k in self.p_key]
        flow_tracks = self.flow_keys if same else [track_of_key[k] for k in self.flow_keys]
        ts_ns = self.ts_ns
        if len(ts_ns) < len(events):  # (events the fixes appended: metadata, never scanned)
            ts_ns = ts_ns + [None] * (len(events) - len(ts_ns))
        with_args, with_args_keys = self.with_args, self.with_args_keys

        def correlate() -> dict:
            return _correlations(events, zip(with_args, [track_of_key[k] for k in with_args_keys]))
        return TraceScan(tracks, track_of, ts_ns, self.p_index, push_track, self.p_ts, self.p_negdur,
                         self.p_placed, self.flow_indices, flow_tracks, correlate if self.flow_indices else dict)


def _correlations(events: list, with_args) -> dict:
    """(track number, correlation) -> the X event index with that int `correlation` arg, or the list of them;
    `with_args`: (index, track number) of the X events with args."""
    by_correlation: dict = {}
    decode = CORRELATION.decode
    for i, track in with_args:
        args = events[i].args
        if type(args) is Raw:  # (correlation_of, inlined: it runs for every X event with args)
            try:
                corr = decode(args).correlation
            except msgspec.ValidationError:
                continue
        else:
            corr = correlation_of(args)
        if isinstance(corr, int):
            point = (track, corr)
            have = by_correlation.get(point)
            if have is None:
                by_correlation[point] = i
            elif have.__class__ is list:
                have.append(i)
            else:
                by_correlation[point] = [have, i]
    return by_correlation
