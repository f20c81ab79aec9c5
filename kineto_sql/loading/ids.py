"""Process and thread ids the way Perfetto v52's importer can hold them.

The importer turns negative, >2^32 and non-numeric pids/tids into 0 or an interned string number, which
merges unrelated processes (Kineto's pid -1 overhead process lands on GPU 0): those get fresh ids in a
reserved range, named after the original. It gives tid 0 the thread `tid := pid`, merging it with the
process's main thread: events written with tid 0 get a thread of their own.
"""
from __future__ import annotations

from kineto_sql.loading.decode import UNSET, Event
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.validate import UINT32_MAX, Survey

# Fresh ids live high in the uint32 range, far above real pids, tids and stream numbers.
REMAPPED_TID_BASE = 4_100_000_000
REMAPPED_PID_BASE = 4_200_000_000
TID_ZERO_BASE = 4_150_000_000


def _valid_id(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 0 <= value <= UINT32_MAX:
        return value
    if isinstance(value, str) and value.isdigit() and int(value) <= UINT32_MAX:
        return int(value)
    return None


_MISSING = UNSET


def remap_ids(events: list[Event], report: IngestReport, survey: Survey) -> dict | None:
    """Fresh ids for the pids/tids Perfetto cannot hold; the maps ({"pid": {value: (new, fresh)},
    "tid": ...}) when it changed anything, else None."""
    maps = {}
    for key, base in (("pid", REMAPPED_PID_BASE), ("tid", REMAPPED_TID_BASE)):
        replace, fresh = {}, 0
        # In order of first appearance, so fresh ids are the same on every run. After validate_events a
        # pid/tid is an int, a str or None, whose values never compare equal: the value alone is the key.
        for value in (survey.pids if key == "pid" else survey.tids):
            fixed = _valid_id(value)
            if fixed is None:
                replace[value] = (base + fresh, True)
                fresh += 1
            elif fixed != value or type(value) is not int:
                replace[value] = (fixed, False)
        maps[key] = replace
    pid_map, tid_map = maps["pid"], maps["tid"]
    if not pid_map and not tid_map:
        return None

    metadata = [events[i] for i in survey.metadata_at]
    named_pids = {e.get("pid") for e in metadata if e.get("name") == "process_name"}
    named_tids = {(e.get("pid"), e.get("tid")) for e in metadata if e.get("name") == "thread_name"}
    numeric_strings, extra, named_new = 0, [], set()
    for e in (events[i] for i in survey.odd_ids):  # (every other event's pid and tid are kept as they are)
        pid_hit = pid_map.get(e.get("pid", _MISSING)) if pid_map else None
        tid_hit = tid_map.get(e.get("tid", _MISSING)) if tid_map else None
        if pid_hit is None and tid_hit is None:
            continue
        originals = {}
        for key, hit in (("pid", pid_hit), ("tid", tid_hit)):
            if hit is not None:
                originals[key] = e[key]
                e[key] = hit[0]
                numeric_strings += not hit[1]
        # Name each remapped process/thread after its original id when the trace did not name it.
        for key in originals:
            new_id = e["pid"] if key == "pid" else (e.get("pid"), e["tid"])
            if not maps[key][originals[key]][1] or new_id in named_new:
                continue
            named_new.add(new_id)
            name = str(originals[key]) or "(empty id)"
            original_key = originals.get("pid", e.get("pid"))
            if key == "pid" and originals[key] not in named_pids:
                extra.append(Event(ph="M", name="process_name", pid=e["pid"], tid=0, args={"name": name}))
            elif key == "tid" and (original_key, originals[key]) not in named_tids:
                extra.append(Event(ph="M", name="thread_name", pid=e.get("pid"), tid=e["tid"],
                                    args={"name": name}))
    events.extend(extra)
    fresh = [f"{key} {value!r} -> {new}" for key in ("pid", "tid")
             for value, (new, is_fresh) in maps[key].items() if is_fresh]
    report.add("id_remapped", len(fresh),
               "Perfetto turns negative, >2^32 and non-numeric pids/tids into 0 or an interned string number, "
               "which merges unrelated processes (Kineto's pid -1 overhead process lands on GPU 0); they get "
               f"fresh ids from {REMAPPED_TID_BASE} (tids) and {REMAPPED_PID_BASE} (pids), named after the original",
               examples=fresh)
    report.add("numeric_string_id", numeric_strings,
               "a pid/tid written as a string of digits is read as that number, as Kineto meant it")
    return maps


def zero_tid_pids(survey: Survey, maps: dict | None) -> set | None:
    """The pids of the events with tid 0 (X, i, I, s, t, f) as they are after the remap, or None when only
    the events can tell (a tid remapped to 0, or a null pid given a fresh id)."""
    if maps is None:
        return survey.zero_tid_pids
    pid_map, tid_map = maps["pid"], maps["tid"]
    if None in pid_map or any(new == 0 for new, _ in tid_map.values()):
        return None
    pids = {pid_map[pid][0] if pid in pid_map else pid for pid in survey.zero_tid_pids}
    pids.discard(0)
    return pids


def split_tid_zero(events: list[Event], report: IngestReport, zero_pids: set | None = None) -> dict:
    """The importer gives tid 0 the thread `tid := pid`, merging it with the process's main thread when
    that thread also has events (Kineto writes other python threads' frames with tid 0): give it its own.
    `zero_pids`: the pids of the X / i / I / s / t / f events with tid 0, when already known. Returns
    {pid: the fresh tid its tid 0 events got} (empty: nothing changed)."""
    if zero_pids is None:
        zero_pids = {e.get("pid") for e in events if e.get("tid") == 0 and e.get("ph") in ("X", "i", "I", "s", "t", "f")}
        zero_pids.discard(0)
        zero_pids.discard(None)
    if not zero_pids:
        return {}
    clash = {e.get("pid") for e in events if e.get("pid") in zero_pids and e.get("tid") == e.get("pid")
             and e.get("ph") != "M"}
    if not clash:
        return {}
    fresh = {pid: TID_ZERO_BASE + i for i, pid in enumerate(sorted(clash, key=repr))}
    moved = 0
    for e in events:
        if e.get("tid") == 0 and e.get("pid") in fresh and e.get("ph") != "M":
            e["tid"] = fresh[e["pid"]]
            moved += 1
    for pid, tid in fresh.items():
        events.append(Event(ph="M", name="thread_name", pid=pid, tid=tid, args={"name": "tid 0"}))
    report.add("tid_zero_split", moved,
               "events written with tid 0 would land on the process's main thread (the importer reads tid 0 as "
               f"tid = pid) and merge with it; they keep their own thread (tid {TID_ZERO_BASE}+, named 'tid 0')",
               examples=[f"pid {pid}" for pid in fresh])
    return fresh


def final_ids(maps: dict | None, tid_zero: dict):
    """`(pid, tid) -> (pid, tid)`: the ids an X / i / I / s / t / f event written with these (as validated,
    UNSET where missing) has after remap_ids (`maps`) and split_tid_zero (`tid_zero`); None when neither
    changed any (scan.ScanParts.finish)."""
    if maps is None and not tid_zero:
        return None
    pid_map, tid_map = (maps["pid"], maps["tid"]) if maps is not None else ({}, {})

    def final(pid, tid):
        hit = pid_map.get(pid)
        tid_hit = tid_map.get(tid)
        if hit is not None:
            pid = hit[0]
        if tid_hit is not None:
            tid = tid_hit[0]
        if tid == 0 and tid.__class__ is int and pid in tid_zero:
            tid = tid_zero[pid]
        return pid, tid
    return final
