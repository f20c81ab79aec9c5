"""Making every flow arrow join the slice it was written for.

A v1 flow event (`s`/`t`/`f`) does not name its slice: v52 binds it to the top of its thread's slice
stack, i.e. the last slice that *began* on that thread before it (stacks are popped lazily), even if that
slice has ended. So an arrow can land on a 0-duration sibling that began at the same microsecond
(cudaFuncSetAttribute before cudaLaunchKernel), or on the neighbour of a slice moved to an overlap lane.

The slice a Kineto CPU-to-GPU flow was written for is known: its `correlation` arg equals the flow id.
For each flow event whose engine binding differs from that intended slice, this module first moves the
event to the intended slice's lane; when no timestamp can reach the slice (another slice begins at the
same instant), it rewrites the arrow as an explicit v2 binding (`bind_id` + `flow_out`/`flow_in` on the two
X events), which v52 honours exactly.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict

import msgspec

from kineto_sql.loading.decode import Raw, full
from kineto_sql.loading.events import engine_tid, ns, pushes_slice, sort_key
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.scan import CORRELATION, TraceScan, correlation_of

FLOW_PHASES = ("s", "t", "f")
# Explicit (v2) flow ids live in their own id space in the importer; start high for readability.
V2_BIND_BASE = 7_000_000_000


def bind_flows(events: list, scan: TraceScan, moved_to_lanes: set[int], report: IngestReport,
               keep: list | None = None) -> bool:
    """`scan` was taken before the overlap split; `moved_to_lanes` holds the indices that split moved.
    `keep`, when given, is handed this pass's lookups (entries per flow event) to free later, off the
    path to the engine's first piece (prepare.PreparedTrace), instead of as this returns."""
    flow_indices = scan.flow_indices
    if not flow_indices:
        return False
    ts_ns = scan.ts_ns

    lazy_stacks: list[_Stacks] = []

    def stacks() -> _Stacks:
        """The full importer simulation, built only when the fast path cannot decide."""
        if not lazy_stacks:
            lazy_stacks.append(_Stacks(events, flow_indices))
        return lazy_stacks[0]

    intended_of, at_risk = _intended_and_at_risk(events, scan, moved_to_lanes)
    if moved_to_lanes:
        begins = _begins_at_flow_points(events, scan, at_risk)
    else:
        begins = _begins_from_scan(events, scan, at_risk)

    def bound_to(track: tuple, key: tuple, enclosing: bool, j: int) -> int | None:
        if enclosing:
            earlier = [k for k in begins.get(track + (key[0],), ()) if k < key]
            if earlier:
                return max(earlier)[3]
        if track == (events[j].get("pid"), engine_tid(events[j])):
            return stacks().own_target(j)
        return stacks().target_on(track, key, enclosing)

    moved, to_rebind = 0, set()
    for j in at_risk:
        e = events[j]
        track = (e.get("pid"), engine_tid(e))
        intended = intended_of[j]
        target_track = (events[intended].get("pid"), engine_tid(events[intended]))
        enclosing = e.get("ph") != "f" or e.get("bp") == "e"
        # Flow events are never X: their sort key is (ts, 2, 0, index) (events.sort_key).
        if bound_to(target_track, (ts_ns[j], 2, 0, j), enclosing, j) == intended:
            if target_track != track:
                e["tid"] = target_track[1]
                moved += 1
            continue
        to_rebind.add(j)

    # A flow end sorted before its start (same timestamp, written first) is dropped by the importer
    # (stat flow_end_without_start, severity info only). Equal-time events that are not X keep file
    # order, so moving the end to the end of the file fixes it without touching any timestamp.
    # Only the pairs with a member to rebind are built, in the order of the file (the explicit ids follow it).
    keys = {arrow_key(events[j]) for j in to_rebind}
    halves, reorder, pairs = _arrow_summary(events, flow_indices, ts_ns, keys)
    report.add("flow_half_arrow", halves,
               "flow events whose other half is not in the file (a start without an end or the reverse): "
               "no arrow can be drawn for them, in Perfetto or anywhere; nothing was changed")
    touched = {key: pairs[key] for key in sorted(keys, key=lambda k: pairs[k][0])}
    for j in to_rebind_partners(touched, to_rebind, intended_of, events):
        intended_of[j] = stacks().own_target(j)
    rebound, unresolved, drop, late = _rebind_explicitly(events, touched, to_rebind, intended_of)
    reorder |= late
    if drop or reorder:
        _move_to_end(events, sorted(drop | reorder), sorted(reorder - drop))
    report.add("flow_followed_lane", moved,
               "flow events bound to a slice moved to an overlap lane were moved with it")
    report.add("flow_bound_explicitly", rebound,
               "the importer would bind these flows to a slice that began at the same instant as theirs; each "
               "arrow is written as an explicit v2 binding on its two slices (its flow keeps no cat/name args)")
    report.add("flow_end_reordered", len(reorder),
               "a flow end written before its start at the same timestamp is dropped by the importer "
               "(flow_end_without_start); the end event moved to the end of the file, times unchanged")
    report.add("flow_unresolved", unresolved,
               "flows whose intended slice could not be bound (it already carries another explicit flow); "
               "the importer binds them as the file says")
    if keep is not None:
        keep.append((pairs, intended_of, at_risk, begins, lazy_stacks))
    return bool(moved or rebound or reorder)


def _move_to_end(events: list, removed: list[int], tail: list[int]) -> None:
    """Drops the events at the sorted indices `removed`, except those of `tail` (a sorted part of it), which
    go to the end of the list, in file order."""
    late = [events[i] for i in tail]
    kept, previous = [], 0
    for i in removed:
        kept += events[previous:i]
        previous = i + 1
    kept += events[previous:]
    events[:] = kept + late


def _intended_and_at_risk(events: list, scan: TraceScan, moved: set[int]) -> tuple[dict, list]:
    """Each flow event's intended slice (the X event of its thread that carries its id as `correlation`
    and contains its timestamp), and the flow events whose binding the importer may get wrong.

    A flow event is *at risk* unless all of these hold, in which case the importer binds it to its
    intended slice by construction and bind_flows would change nothing for it:
      - it binds to the enclosing slice (ph s/t, or f with bp "e"): the last slice begun before it;
      - its intended slice begins exactly at its timestamp, and is the only slice-pushing event that
        begins on that thread at that instant (X events sort before flow events at equal ts, so nothing
        can sort between the slice and the flow, and every slice begun earlier sorts before the slice);
      - that slice was not moved to an overlap lane. (The overlap split only moves slices off a thread,
        onto fresh lane threads, so a thread keeps a subset of its slices: the one slice that began there
        is still the only one.)
    A flow event without a timestamp or without an intended slice is never changed, so never at risk.
    """
    intended_of, at_risk = {}, []
    ts_ns = scan.ts_ns
    begins = scan.begins_at_flows  # (ts -> the slices that begin then)
    push_track, push_index = scan.push_track, scan.push_index
    decode = CORRELATION.decode
    by_correlation = None  # (every X event's correlation: only for a flow event the common case cannot place)
    for j, track, ts in zip(scan.flow_indices, scan.flow_tracks, scan.flow_ts):
        if ts is None:
            continue
        e = events[j]
        flow_id = e.id
        if flow_id.__class__ is not int:
            flow_id = _as_int(flow_id)
        # The common case: a slice that begins where the flow event sits carries the flow's id. Of the slices
        # that carry it and contain the flow's ts, one that begins there wins, the first in file order
        # (_intended_slice), so it is the intended slice whatever other slices carry the id; it is at risk
        # if another slice begins there too, if it moved to a lane, or if the flow binds to the next slice.
        rows = begins.get(ts)
        if rows.__class__ is int:  # (one slice begins then, on any thread: most flow events)
            if push_track[rows] == track:
                one = push_index[rows]
                x = events[one]
                if x.ph == "X":
                    args = x.args
                    if args.__class__ is Raw:  # (correlation_of, inlined)
                        try:
                            corr = decode(args).correlation
                        except msgspec.ValidationError:
                            corr = None
                    else:
                        corr = correlation_of(args)
                    if corr == flow_id and isinstance(corr, int):
                        intended_of[j] = one
                        if one in moved or not (e.ph != "f" or e.bp == "e"):
                            at_risk.append(j)
                        continue
        elif rows is not None:
            here = scan.begun_on(rows, track)
            for one in here:
                x = events[one]
                if x.ph == "X":
                    corr = correlation_of(x.args)
                    if corr == flow_id and isinstance(corr, int):
                        intended_of[j] = one
                        if len(here) > 1 or one in moved or not (e.ph != "f" or e.bp == "e"):
                            at_risk.append(j)
                        break
            else:
                rows = None
            if rows is not None:
                continue
        if by_correlation is None:
            by_correlation = scan.by_correlation
        candidates = by_correlation.get((track, flow_id))
        if candidates is None:
            continue
        if candidates.__class__ is int and ts_ns[candidates] == ts:
            intended, starts_here = candidates, True
        else:
            intended = _intended_slice(events, [candidates] if candidates.__class__ is int else candidates, ts)
            if intended is None:
                continue
            starts_here = ts_ns[intended] == ts
        intended_of[j] = intended
        if not starts_here:
            at_risk.append(j)
            continue
        # (the intended slice is on the flow's thread, at the flow's ts: starts_here)
        if len(scan.begun_on(begins[ts], track)) > 1 or intended in moved or not (e.ph != "f" or e.bp == "e"):
            at_risk.append(j)
    return intended_of, at_risk


def _arrow_summary(events: list, flow_indices: list[int], ts_ns: list, keys: set) -> tuple[int, set, dict]:
    """_halves_and_reorder of every arrow, and the arrows (_arrows) of the arrow keys in `keys` (each the key
    of a flow event with a timestamp)."""
    pairs = _arrows(events, flow_indices, ts_ns)
    halves, reorder = _halves_and_reorder(events, pairs, ts_ns)
    return halves, reorder, {key: pairs[key] for key in keys}


def arrow_key(e) -> tuple:
    """What the events of one arrow share: id, cat and name (UNSET where the event has none)."""
    return (e.id, e.cat, e.name)


def _arrows(events: list, flow_indices: list[int], ts_ns: list) -> dict[tuple, list[int]]:
    """The flow events with a timestamp by arrow, in file order: an arrow's events share id, cat and name
    (after validate_events an id is an int or a str)."""
    pairs: dict[tuple, list[int]] = {}
    for j in flow_indices:
        if ts_ns[j] is None:
            continue
        e = events[j]
        key = (e.id, e.cat, e.name)  # (arrow_key, inlined: it runs for every flow event)
        members = pairs.get(key)
        if members is None:
            pairs[key] = [j]
        else:
            members.append(j)
    return pairs


def _halves_and_reorder(events: list, pairs: dict[tuple, list[int]], ts_ns: list) -> tuple[int, set[int]]:
    """How many flow events are half an arrow, and the arrow ends that sort before their start."""
    reorder, halves = set(), 0
    for members in pairs.values():
        if len(members) == 1:  # half an arrow: the common case on GPU traces (flow ends without starts)
            halves += 1
            continue
        if len(members) == 2:
            a, b = members
            phases = events[a].ph + events[b].ph
            if phases == "sf" or phases == "fs":  # the common case: one start, one end
                start, end = (a, b) if phases == "sf" else (b, a)
                if (ts_ns[end], end) < (ts_ns[start], start):
                    reorder.add(end)
                continue
        starts = [j for j in members if events[j].ph == "s"]
        ends = [j for j in members if events[j].ph == "f"]
        if len(starts) == 1 and len(ends) == 1 and (ts_ns[ends[0]], ends[0]) < (ts_ns[starts[0]], starts[0]):
            reorder.add(ends[0])
        if not starts or not ends:
            halves += len(members)
    return halves, reorder


def _begins_from_scan(events: list, scan: TraceScan, at_risk: list[int]) -> dict[tuple, list[tuple]]:
    """The sort keys of the slices beginning where an at-risk flow event sits (threads as scanned)."""
    ts_ns = scan.ts_ns
    if not at_risk:
        return {}
    # The flow events' threads as scanned (scan_events numbered every (pid, tid) it saw on a flow event).
    points = {(scan.track_of[(events[j].get("pid"), events[j].get("tid"))], ts_ns[j]) for j in at_risk}
    begins = scan.begins_at_flows  # (the at-risk flow events' ts are among them)
    return {scan.tracks[track] + (ts,): [sort_key(events[i], i, ts) for i in scan.begun_on(begins.get(ts, ()), track)]
            for track, ts in points}


def _begins_at_flow_points(events: list, scan: TraceScan, flow_indices: list[int]) -> dict[tuple, list[tuple]]:
    """The same, from the events' threads as they are now (after the overlap split moved some to lanes):
    only slices that begin where one of these flow events' process sits can matter (a miss here only sends
    that flow to the full simulation)."""
    ts_ns = scan.ts_ns
    flow_points = {(events[j].get("pid"), ts_ns[j]) for j in flow_indices}
    begins: dict[tuple, list[tuple]] = defaultdict(list)
    for i, ts in zip(scan.push_index, scan.push_ts):
        e = events[i]
        pid = e.get("pid")
        if (pid, ts) in flow_points:
            begins[(pid, engine_tid(e), ts)].append(sort_key(e, i, ts))
    return begins


class _Stacks:
    """Which slice the importer binds each flow event to: the last slice begun on its thread before it.

    All slice-pushing events and flow events are sorted together in the importer's order (numpy lexsort);
    a running maximum carries the last slice position forward, so every flow's binding is one lookup.
    Built only when bind_flows's fast path cannot decide a binding, so numpy is imported here, not on the
    loader child's common path.
    """

    def __init__(self, events: list, flow_indices: list[int]):
        import numpy as np

        self.events = events
        track_ids: dict[tuple, int] = {}
        rows = []  # (track, ts, group, negdur, index, is_flow, bp_enclosing)
        for i, e in enumerate(events):
            if pushes_slice(e):
                ts = ns(e.get("ts"))
                if ts is not None:
                    group, negdur = (1, -(ns(e.get("dur")) or 0)) if e.get("ph") == "X" else (2, 0)
                    rows.append((track_ids.setdefault((e.get("pid"), engine_tid(e)), len(track_ids)),
                                 ts, group, negdur, i, 0, 1))
        for j in flow_indices:
            e = events[j]
            ts = ns(e.get("ts"))
            if ts is not None:
                enclosing = e.get("ph") != "f" or e.get("bp") == "e"
                rows.append((track_ids.setdefault((e.get("pid"), engine_tid(e)), len(track_ids)),
                             ts, 2, 0, j, 1, int(enclosing)))
        self.track_ids = track_ids
        table = np.array(rows, dtype=np.int64).reshape(-1, 7)
        order = np.lexsort((table[:, 4], table[:, 3], table[:, 2], table[:, 1], table[:, 0]))
        table = table[order]
        self.table = table
        n = len(table)
        positions = np.arange(n)
        is_slice = table[:, 5] == 0
        last = np.maximum.accumulate(np.where(is_slice, positions, -1))
        nxt = np.minimum.accumulate(np.where(is_slice, positions, n)[::-1])[::-1]
        self._own: dict[int, int | None] = {}
        for pos in np.nonzero(~is_slice)[0]:
            candidate = last[pos] if table[pos, 6] else (nxt[pos] if nxt[pos] < n else -1)
            ok = candidate >= 0 and table[candidate, 0] == table[pos, 0]
            self._own[int(table[pos, 4])] = int(table[candidate, 4]) if ok else None
        self._per_track: dict[int, tuple[list, list]] = {}

    def own_target(self, j: int) -> int | None:
        """The slice flow event j binds to on its own thread."""
        return self._own.get(j)

    def target_on(self, track: tuple, key: tuple, bp_enclosing: bool) -> int | None:
        """The slice a flow event with sort `key` would bind to if it were on `track` (an overlap lane)."""
        tid = self.track_ids.get(track)
        if tid is None:
            return None
        if tid not in self._per_track:
            rows = self.table[(self.table[:, 0] == tid) & (self.table[:, 5] == 0)]
            self._per_track[tid] = ([tuple(int(v) for v in r[1:5]) for r in rows], [int(r[4]) for r in rows])
        keys, indices = self._per_track[tid]
        position = bisect_left(keys, key)
        if bp_enclosing:
            return indices[position - 1] if position else None
        return indices[position] if position < len(indices) else None


def _as_int(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value, 16) if value.lower().startswith("0x") else int(value)
        except ValueError:
            return None
    return None


def _intended_slice(events: list, candidates, ts: int) -> int | None:
    """The slice carrying the flow's correlation that contains its timestamp (an exact start wins)."""
    best = None
    for i in candidates:
        start = ns(events[i].get("ts"))
        end = start + (ns(events[i].get("dur")) or 0)
        if start <= ts <= end:
            if start == ts:
                return i
            best = i
    return best


def to_rebind_partners(pairs: dict[tuple, list[int]], to_rebind: set[int], intended_of: dict[int, int],
                       events: list) -> list[int]:
    """Flow events without a correlation whose partner needs an explicit binding: their slice is the
    importer's own choice, which only the full simulation knows."""
    if not to_rebind:
        return []
    return [j for members in pairs.values() if any(m in to_rebind for m in members)
            for j in members if j not in intended_of]


def _rebind_explicitly(events: list, groups: dict[tuple, list[int]], to_rebind: set[int],
                       intended_of: dict[int, int]) -> tuple[int, int, set[int], set[int]]:
    if not to_rebind:
        return 0, 0, set(), set()
    next_id, rebound, unresolved, drop, late = V2_BIND_BASE, 0, 0, set(), set()
    for members in groups.values():
        if not any(j in to_rebind for j in members):
            continue
        starts = [j for j in members if events[j].get("ph") == "s"]
        ends = [j for j in members if events[j].get("ph") == "f"]
        if not starts or not ends:
            continue  # half an arrow in the file (a start or an end alone): there is nothing to bind
        if len(starts) != 1 or len(ends) != 1:
            unresolved += sum(1 for j in members if j in to_rebind)
            continue
        source, sink = intended_of.get(starts[0]), intended_of.get(ends[0])
        if source is None or sink is None or "bind_id" in events[source] or "bind_id" in events[sink]:
            unresolved += sum(1 for j in members if j in to_rebind)
            continue
        source_key = sort_key(events[source], source, ns(events[source].get("ts")))
        sink_key = sort_key(events[sink], sink, ns(events[sink].get("ts")))
        if sink_key[:3] < source_key[:3]:
            unresolved += sum(1 for j in members if j in to_rebind)  # the arrow would point back in time
            continue
        if sink_key < source_key:
            late.add(sink)  # same instant and duration: only file order decides, so write the sink last
        events[source] = full(events[source])  # (an Event holds the explicit binding's fields)
        events[sink] = full(events[sink])
        events[source].update(bind_id=next_id, flow_out=True)
        events[sink].update(bind_id=next_id, flow_in=True)
        next_id += 1
        drop.update((starts[0], ends[0]))
        rebound += 1
    return rebound, unresolved, drop, late

