"""Overlap lanes: Perfetto v52 drops an X event that overlaps another on its thread without nesting.

The v52 JSON importer drops such an event (stat slice_drop_overlapping_complete_event) and then binds its
flow to the wrong slice; each one moves, unchanged, to an "overlap lane" of its process (a new thread
named after the original thread), where it nests. Perfetto v57+ keeps overlapping slices itself: this
module runs only for an engine that needs it (engine_quirks.py).
"""
from __future__ import annotations

from kineto_sql.loading.decode import Event, args_of
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.scan import TraceScan

LANE_TID_BASE = 4_000_000_000


def _name_arg(e: Event):
    args = args_of(e)
    return args.get("name") if isinstance(args, dict) else None


def split_overlaps(events: list[Event], scan: TraceScan, report: IngestReport,
                    metadata_events: list[int] | None = None) -> set[int]:
    """Packs X events that cannot nest on their thread into overlap lanes, as v52 would drop them.
    `metadata_events`: the indices of the ph M events (all events are looked at when not given).
    Returns the indices of the events it moved."""
    split = scan.unnested_threads()
    split.sort()  # threads in file order of their first X event, so lane ids are the same on every run

    thread_names = None
    next_tid = LANE_TID_BASE
    moved_examples, lanes_made, moved = [], [], set()
    for _, track, items in split:
        lane_stacks: list[list[int]] = [[]]
        lane_of = []
        for event_ts, neg_dur, _ in items:
            event_end = event_ts - neg_dur
            for lane, stack in enumerate(lane_stacks):
                while stack and stack[-1] <= event_ts:
                    stack.pop()
                if not stack or event_end <= stack[-1]:
                    stack.append(event_end)
                    break
            else:
                lane = len(lane_stacks)
                lane_stacks.append([event_end])
            lane_of.append(lane)
        if thread_names is None:
            metadata = events if metadata_events is None else [events[i] for i in metadata_events]
            thread_names = {(e.get("pid"), e.get("tid")): _name_arg(e)
                            for e in metadata if e.get("ph") == "M" and e.get("name") == "thread_name"}
        pid, tid = scan.tracks[track]
        lane_tids = [tid]
        base_name = thread_names.get((pid, tid)) or f"thread {tid}"
        for lane in range(1, len(lane_stacks)):
            lane_tids.append(next_tid)
            events.append(Event(ph="M", name="thread_name", pid=pid, tid=next_tid,
                                args={"name": f"{base_name} (overlap lane {lane})"}))
            lanes_made.append(f"{base_name} (overlap lane {lane}) of pid {pid}")
            next_tid += 1
        for (event_ts, _, i), lane in zip(items, lane_of):
            if lane:
                events[i]["tid"] = lane_tids[lane]
                moved.add(i)
                if len(moved_examples) < 5:
                    moved_examples.append(f"{events[i].get('name')} @ {event_ts} ns on {base_name}")

    report.add("overlap_lane", len(moved),
               "Perfetto v52 drops an X event that overlaps another on the same thread without nesting "
               "(stat slice_drop_overlapping_complete_event) and binds its flow to the wrong slice; each such "
               "event moved, unchanged, to an overlap lane of its process",
               examples=moved_examples)
    report.add("overlap_lane_thread", len(lanes_made), "threads created to hold those events", examples=lanes_made)
    return moved
