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

from kineto_sql.loading.events import engine_tid, ns, pushes_slice, sort_key
from kineto_sql.loading.report import IngestReport

FLOW_PHASES = ("s", "t", "f")
# Explicit (v2) flow ids live in their own id space in the importer; start high for readability.
V2_BIND_BASE = 7_000_000_000


def bind_flows(events: list[dict], original_tracks: dict[int, tuple], report: IngestReport) -> bool:
    flow_indices = [i for i, e in enumerate(events) if e.get("ph") in FLOW_PHASES]
    if not flow_indices:
        return False

    # Slice stacks per final thread: sort keys and event indices, in the importer's order.
    stacks: dict[tuple, list[tuple]] = defaultdict(list)
    for i, e in enumerate(events):
        if pushes_slice(e):
            ts = ns(e.get("ts"))
            if ts is not None:
                stacks[(e.get("pid"), engine_tid(e))].append((sort_key(e, i, ts), i))
    keys = {}
    for track, items in stacks.items():
        items.sort()
        keys[track] = [k for k, _ in items]

    by_correlation: dict[tuple, list[int]] = defaultdict(list)
    for i, track in original_tracks.items():
        args = events[i].get("args")
        if isinstance(args, dict) and isinstance(args.get("correlation"), int):
            by_correlation[(track, args["correlation"])].append(i)

    def engine_target(track: tuple, key: tuple, bp_enclosing: bool) -> int | None:
        if track not in keys:
            return None
        position = bisect_left(keys[track], key)
        if bp_enclosing:
            return stacks[track][position - 1][1] if position else None
        return stacks[track][position][1] if position < len(keys[track]) else None

    moved, to_rebind, intended_of, flow_keys = 0, set(), {}, {}
    for j in flow_indices:
        e = events[j]
        ts = ns(e.get("ts"))
        if ts is None:
            continue
        track = (e.get("pid"), engine_tid(e))
        bp_enclosing = e.get("ph") != "f" or e.get("bp") == "e"
        flow_keys[j] = sort_key(e, j, ts)
        intended = _intended_slice(events, by_correlation.get((track, _as_int(e.get("id"))), ()), ts)
        if intended is None:
            intended_of[j] = engine_target(track, flow_keys[j], bp_enclosing)
            continue
        intended_of[j] = intended
        target_track = (events[intended].get("pid"), engine_tid(events[intended]))
        if engine_target(target_track, flow_keys[j], bp_enclosing) == intended:
            if target_track != track:
                e["tid"] = target_track[1]
                moved += 1
            continue
        to_rebind.add(j)

    # A flow end sorted before its start (same timestamp, written first) is dropped by the importer
    # (stat flow_end_without_start, severity info only). Equal-time events that are not X keep file
    # order, so moving the end to the end of the file fixes it without touching any timestamp.
    reorder = set()
    pairs: dict[tuple, list[int]] = defaultdict(list)
    for j in flow_keys:
        pairs[(repr(events[j].get("id")), events[j].get("cat"), events[j].get("name"))].append(j)
    for members in pairs.values():
        starts = [j for j in members if events[j].get("ph") == "s"]
        ends = [j for j in members if events[j].get("ph") == "f"]
        if len(starts) == 1 and len(ends) == 1 and flow_keys[ends[0]] < flow_keys[starts[0]]:
            reorder.add(ends[0])

    halves = sum(len(m) for m in pairs.values()
                 if not any(events[j].get("ph") == "s" for j in m) or not any(events[j].get("ph") == "f" for j in m))
    report.add("flow_half_arrow", halves,
               "flow events whose other half is not in the file (a start without an end or the reverse): "
               "no arrow can be drawn for them, in Perfetto or anywhere; nothing was changed")
    rebound, unresolved, drop, late = _rebind_explicitly(events, flow_indices, to_rebind, intended_of)
    reorder |= late
    if drop or reorder:
        tail = [events[i] for i in sorted(reorder - drop)]
        events[:] = [e for i, e in enumerate(events) if i not in drop and i not in reorder] + tail
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
    return bool(moved or rebound or reorder)


def _as_int(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value, 16) if value.lower().startswith("0x") else int(value)
        except ValueError:
            return None
    return None


def _intended_slice(events: list[dict], candidates, ts: int) -> int | None:
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


def _rebind_explicitly(events: list[dict], flow_indices: list[int], to_rebind: set[int],
                       intended_of: dict[int, int]) -> tuple[int, int, set[int], set[int]]:
    if not to_rebind:
        return 0, 0, set(), set()
    groups: dict[tuple, list[int]] = defaultdict(list)
    for j in flow_indices:
        e = events[j]
        groups[(repr(e.get("id")), e.get("cat"), e.get("name"))].append(j)
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
        events[source].update(bind_id=next_id, flow_out=True)
        events[sink].update(bind_id=next_id, flow_in=True)
        next_id += 1
        drop.update((starts[0], ends[0]))
        rebound += 1
    return rebound, unresolved, drop, late

