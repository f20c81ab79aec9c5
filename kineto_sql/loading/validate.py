"""One schema for the fields of a trace event, checked on every event before the loader changes anything.

The loader's fixes and Perfetto's importer assume each event has the types Kineto writes. A file that was
hand-edited, truncated and re-closed, or written by another tool can break that in ways that used to end
in a traceback (a list as `pid`), a wrong number with exit 0 (a negative `dur`), or an event the engine
silently drops (an X event without `ts`). Every field of the decoded events (decode.Event) is checked
here, once:

    field   expected                                              when it is not
    ------  ----------------------------------------------------  -----------------------------------------
    (entry) a JSON object                                         DROP
    ph      a string                                              DROP
    ts      finite number (or numeric string), |ts| < 2^63 ns     DROP (ph M, which needs no time: KEEP
            (and no farther from the others than that: rebase)    without it, reported by index and field)
    dur     (X) finite number (or numeric string) >= 0 that       missing / not a number: KEEP as 0
            keeps ts + dur inside int64 ns                        negative: KEEP clamped to 0
                                                                  beyond int64 with ts: KEEP as 0
    id      (s/t/f) an integer or a string                        DROP (an arrow without an id binds nothing)
    pid/tid an integer or a string (remapped later if Perfetto    KEEP as its JSON text (then remapped and
            cannot hold it)                                       named after it, see ids.py)
    name,   a string                                              KEEP as its JSON text
    cat
    s, bp   a string                                              KEEP without it (the importer's default)
    args    an object                                             not an object: KEEP as {"value": text}
                                                                  (nested deeper than MAX_ARG_DEPTH: cut,
                                                                  arg_values.py)

Kineto's top-level fields (deviceProperties, distributedInfo, schemaVersion, ...) are checked too
(`validate_metadata`): a field of another shape is left out of kineto_metadata and reported; it is not an
event, so nothing of the timeline is lost.

KEEP means the event reaches the engine and the change is in the ingest report (kind, count, the first
event indices). DROP means the event cannot be placed on a timeline at all: it is reported by index and
reason (`IngestReport.dropped`) and counts as data loss, so the CLI refuses the trace with exit status 2
unless the user passes `--allow-loss` (then it loads the rest and says what is missing). Whole-file
problems (not JSON, no events) are refused earlier, in decode.py and prepare.py.

The decoder has already typed what a schema can type (a Struct per event, `ts` and `args` kept as text);
what is left is per-field repair rather than rejection, and the per-index report, in one plain loop.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from math import floor

import msgspec
import orjson

from kineto_sql.loading.decode import EVENT_TYPES, UNSET, Event, KinetoEvent, Outlier, Raw
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.scan import ScanParts, fast_ns

# A Kineto trace nests args two or three levels deep; 32 leaves room for any real producer, and stays far
# from the recursion limits of a JSON writer (orjson: 255) and of the engine's own JSON reader.
MAX_ARG_DEPTH = 32
INT64_MAX = 2**63 - 1
# |ts| and ts + dur in microseconds must stay below this so the nanosecond value fits int64.
MAX_US = INT64_MAX // 1000
EXAMPLES = 10

_FLOW = frozenset(("s", "t", "f"))


@dataclass
class Survey:
    """What the validation pass saw of the kept events, so later passes need not walk them again."""

    phases: dict  # ph -> number of events, in order of first appearance
    pids: dict  # the pid values, as dict keys in order of first appearance (events without one left out)
    tids: dict  # the same for tid
    # pids of the X / i / I / s / t / f events written with tid 0 (0 and None left out)
    zero_tid_pids: set
    metadata_at: list  # indices (in the kept events) of the ph M events
    # indices (in the kept events) of the events with a pid or tid that is not an int of 0..2^32-1: the only
    # ones the id remap can change (ids.remap_ids)
    odd_ids: list
    scan: ScanParts | None = None  # the scan of the kept events, when asked for


_ZERO_TID_PHASES = frozenset(("X", "i", "I", "s", "t", "f"))
_ID_TYPES = frozenset((int, str, type(None), type(UNSET)))
_TEXT_TYPES = frozenset((str, type(None), type(UNSET)))
UINT32_MAX = 2**32 - 1  # the largest pid / tid the importer keeps as it is


def validate_events(entries: list, report: IngestReport) -> list[Event]:
    """The entries that can be events, with their fields repaired; everything dropped or changed is reported."""
    return validate_and_survey(entries, report)[0]


def validate_and_survey(entries: list, report: IngestReport, odd_args: bool = True,
                        scan: bool = False) -> tuple[list[Event], Survey]:
    """validate_events, and the Survey of what it kept. `odd_args` False: no event's args can be other than
    a JSON object or null (decode.Decoded.odd_args), so they need no look. `scan`: gather the scan of the
    kept events too (Survey.scan, scan.ScanParts: in this loop, rather than in a second one)."""
    parts = ScanParts() if scan else None
    if parts is not None:
        keys, ts_all, with_args, with_args_keys = parts.keys, parts.ts_ns, parts.with_args, parts.with_args_keys
        p_index, p_key, p_ts, p_negdur, p_placed = parts.p_index, parts.p_key, parts.p_ts, parts.p_negdur, parts.p_placed
        flow_indices, flow_keys = parts.flow_indices, parts.flow_keys
        id_pairs = []  # key number -> its (pid, tid) as first seen
    drops: dict[str, list[int]] = defaultdict(list)
    fixes: dict[str, list[int]] = defaultdict(list)
    # The kept entries: None while every entry so far is kept (the list is then `entries` itself: no copy,
    # no append per event); `skipped`: how many were not.
    kept, skipped, bad_metadata = None, 0, []
    shared = {}.setdefault
    phases, pids, tids, zero_tid_pids, metadata_at, odd_ids = {}, {}, {}, set(), [], []
    x_count, x_ph = 0, None  # (the X events _x_ok took: counted into phases["X"] after the loop)
    for index, e in enumerate(entries):
        # The X event as Kineto writes it (most events): its own branch, which checks and records only what
        # such an event can need; anything else goes on to the general checks below.
        if (e.__class__ is KinetoEvent or e.__class__ is Event) and e.ph == "X":
            ts, dur, pid, tid = e.ts, e.dur, e.pid, e.tid
            tk, dk = ts.__class__, dur.__class__
            if ((tk is int or tk is float) and (dk is int or dk is float) and pid.__class__ is int
                    and tid.__class__ is int and -MAX_US <= ts and 0 <= dur and ts + dur <= MAX_US):
                if x_ph is None:
                    x_ph = shared(e.ph, e.ph)
                    phases.setdefault(x_ph, 0)
                e.ph = x_ph
                x_count += 1
                name = e.name
                if name.__class__ is str:
                    e.name = shared(name, name)
                elif type(name) not in _TEXT_TYPES:
                    e.name = text_of(name)
                    fixes["name_or_cat_coerced_to_text"].append(index)
                cat = e.cat
                if cat.__class__ is str:
                    e.cat = shared(cat, cat)
                elif type(cat) not in _TEXT_TYPES:
                    e.cat = text_of(cat)
                    fixes["name_or_cat_coerced_to_text"].append(index)
                args = e.args
                if odd_args and type(args) is Raw and bytes(memoryview(args)[:1]) not in b"{n":
                    e.args = args = {"value": text_of(msgspec.json.decode(args))}
                    fixes["args_not_object_wrapped"].append(index)
                k = index - skipped
                if kept is not None:
                    kept.append(e)
                if not (0 <= pid <= UINT32_MAX and 0 <= tid <= UINT32_MAX):
                    odd_ids.append(k)
                if parts is None:
                    pids[pid] = None
                    tids[tid] = None
                    if tid == 0 and pid != 0:
                        zero_tid_pids.add(pid)
                    continue
                key = (pid, tid)
                number = keys.get(key)
                if number is None:
                    # (a pair seen before was recorded then, by this branch or by the general one: its pid and
                    # tid are in pids and tids already, in order of first appearance)
                    number = keys[key] = len(keys)
                    id_pairs.append(key)
                    pids[pid] = None
                    tids[tid] = None
                    if tid == 0 and pid != 0:
                        zero_tid_pids.add(pid)
                else:  # one int object per distinct pid and tid, as for the strings (~28 MB less on a 112 MB trace)
                    e.pid, e.tid = id_pairs[number]
                ts = ts * 1000 if tk is int else floor(ts * 1000 + 0.5)
                ts_all.append(ts)
                if args is not UNSET:
                    with_args.append(k)
                    with_args_keys.append(number)
                p_index.append(k)
                p_key.append(number)
                p_ts.append(ts)
                p_negdur.append(-(dur * 1000) if dk is int else -floor(dur * 1000 + 0.5))
                p_placed.append(True)
                continue
        # A flow event as Kineto writes it (most of the others): the same, in its own branch.
        if (e.__class__ is KinetoEvent or e.__class__ is Event) and e.ph.__class__ is str and e.ph in _FLOW \
                and parts is not None:
            ts, pid, tid, flow_id, scope, bp = e.ts, e.pid, e.tid, e.id, e.s, e.bp
            tk = ts.__class__
            if ((tk is int or tk is float) and pid.__class__ is int and tid.__class__ is int
                    and (flow_id.__class__ is int or flow_id.__class__ is str) and -MAX_US <= ts <= MAX_US
                    and (scope is UNSET or scope.__class__ is str) and (bp is UNSET or bp.__class__ is str)):
                ph = e.ph = shared(e.ph, e.ph)
                if scope is not UNSET:
                    e.s = shared(scope, scope)
                if bp is not UNSET:
                    e.bp = shared(bp, bp)
                name = e.name
                if name.__class__ is str:
                    e.name = shared(name, name)
                elif type(name) not in _TEXT_TYPES:
                    e.name = text_of(name)
                    fixes["name_or_cat_coerced_to_text"].append(index)
                cat = e.cat
                if cat.__class__ is str:
                    e.cat = shared(cat, cat)
                elif type(cat) not in _TEXT_TYPES:
                    e.cat = text_of(cat)
                    fixes["name_or_cat_coerced_to_text"].append(index)
                args = e.args
                if odd_args and type(args) is Raw and bytes(memoryview(args)[:1]) not in b"{n":
                    e.args = {"value": text_of(msgspec.json.decode(args))}
                    fixes["args_not_object_wrapped"].append(index)
                k = index - skipped
                if kept is not None:
                    kept.append(e)
                phases[ph] = phases.get(ph, 0) + 1
                if not (0 <= pid <= UINT32_MAX and 0 <= tid <= UINT32_MAX):
                    odd_ids.append(k)
                key = (pid, tid)
                number = keys.get(key)
                if number is None:  # (as in the X branch)
                    number = keys[key] = len(keys)
                    id_pairs.append(key)
                    pids[pid] = None
                    tids[tid] = None
                    if tid == 0 and pid != 0:
                        zero_tid_pids.add(pid)
                else:
                    e.pid, e.tid = id_pairs[number]
                ts_all.append(ts * 1000 if tk is int else floor(ts * 1000 + 0.5))
                flow_indices.append(k)
                flow_keys.append(number)
                continue
        if type(e) not in EVENT_TYPES:
            drops["not a JSON object"].append(index)
            kept, skipped = kept if kept is not None else entries[:index], skipped + 1
            continue
        ph = e.ph
        if type(ph) is not str:
            if ph is UNSET and not any(getattr(e, name) is not UNSET for name in e.__struct_fields__):
                fixes["empty_entry_ignored"].append(index)
                kept, skipped = kept if kept is not None else entries[:index], skipped + 1
                continue
            drops["ph is missing or not a string"].append(index)
            kept, skipped = kept if kept is not None else entries[:index], skipped + 1
            continue
        ts = e.ts
        if ts is UNSET:
            ts = None
        if ph != "M":
            kind = type(ts)
            if not ((kind is int or kind is float) and -MAX_US <= ts <= MAX_US):
                reason = _bad_time(ts)
                if reason:
                    drops[f"ts {reason}"].append(index)
                    kept, skipped = kept if kept is not None else entries[:index], skipped + 1
                    continue
        if ph == "X":
            dur = e.dur
            if not ((type(dur) is int or type(dur) is float) and 0 <= dur and type(ts) is not str
                    and ts + dur <= MAX_US):
                why = _fix_dur(e, ts)
                if why:
                    fixes[why].append(index)
        elif ph in _FLOW:
            flow_id = e.id
            if type(flow_id) is not int and type(flow_id) is not str:
                drops["flow event id is missing or not an integer / string"].append(index)
                kept, skipped = kept if kept is not None else entries[:index], skipped + 1
                continue
        pid, tid = e.pid, e.tid
        if type(pid) not in _ID_TYPES:
            e.pid = pid = text_of(pid)
            fixes["id_coerced_to_text"].append(index)
        if type(tid) not in _ID_TYPES:
            e.tid = tid = text_of(tid)
            fixes["id_coerced_to_text"].append(index)
        # One string object per distinct ph / name / cat (the decoder makes one per event: ~30 MB of copies
        # on a 35 MB trace, alive beside the text until the events are written)
        e.ph = shared(ph, ph)
        name = e.name
        if name.__class__ is str:
            e.name = shared(name, name)
        elif type(name) not in _TEXT_TYPES:
            e.name = text_of(name)
            fixes["name_or_cat_coerced_to_text"].append(index)
        cat = e.cat
        if cat.__class__ is str:
            e.cat = shared(cat, cat)
        elif type(cat) not in _TEXT_TYPES:
            e.cat = text_of(cat)
            fixes["name_or_cat_coerced_to_text"].append(index)
        args = e.args
        if odd_args and type(args) is Raw and bytes(memoryview(args)[:1]) not in b"{n":  # (an object, or null)
            e.args = {"value": text_of(msgspec.json.decode(args))}
            fixes["args_not_object_wrapped"].append(index)
        if ph != "X":
            value = e.s  # (s and bp, spelled out: a flow event has one or both, ~30% of the events)
            if value.__class__ is str:
                e.s = shared(value, value)
            elif value is not UNSET:
                e.s = UNSET
                fixes["bad_scope_removed"].append(index)
            value = e.bp
            if value.__class__ is str:
                e.bp = shared(value, value)
            elif value is not UNSET:
                e.bp = UNSET
                fixes["bad_scope_removed"].append(index)
        if ph == "M":
            for key in ("ts", "dur"):  # (a metadata event needs no time, but the engine reads one it has)
                value = getattr(e, key)
                if value is not UNSET and not ((type(value) is int or type(value) is float) and -MAX_US <= value <= MAX_US
                                               ) and _bad_time(value) is not None:
                    setattr(e, key, UNSET)
                    bad_metadata.append(f"event {index}: {key} {value!r}")
            metadata_at.append(index - skipped)
        if kept is not None:
            kept.append(e)
        phases[ph] = phases.get(ph, 0) + 1
        if pid is not UNSET:
            pids[pid] = None
        if tid is not UNSET:
            tids[tid] = None
            if tid == 0 and ph in _ZERO_TID_PHASES and pid != 0 and pid is not None and pid is not UNSET:
                zero_tid_pids.add(pid)
        if (pid is not UNSET and not (pid.__class__ is int and 0 <= pid <= UINT32_MAX)) or (
                tid is not UNSET and not (tid.__class__ is int and 0 <= tid <= UINT32_MAX)):
            odd_ids.append(index - skipped)
        if parts is None:
            continue
        # -- scan.scan_events's loop, for this event (its fields as validated) --
        if ph == "X" or ph in _FLOW or ((ph == "i" or ph == "I") and (e.s is UNSET or e.s == "t")):
            key = (pid, tid)
            number = keys.get(key)
            if number is None:
                number = keys[key] = len(keys)
                id_pairs.append(key)
            ts = ts * 1000 if ts.__class__ is int else (None if ts is None else fast_ns(ts))
            ts_all.append(ts)
            k = index - skipped
            if ph != "X" and ph in _FLOW:
                flow_indices.append(k)
                flow_keys.append(number)
                continue
            negdur, placed = 0, False
            if ph == "X":
                if e.args is not UNSET:
                    with_args.append(k)
                    with_args_keys.append(number)
                if ts is None:
                    continue
                dur = e.dur
                dur = dur * 1000 if dur.__class__ is int else (None if dur is UNSET else fast_ns(dur))
                if dur is not None:
                    negdur, placed = -dur, True
            elif ts is None:
                continue
            p_index.append(k)
            p_key.append(number)
            p_ts.append(ts)
            p_negdur.append(negdur)
            p_placed.append(placed)
        else:
            ts_all.append(None)

    if x_count:
        phases[x_ph] += x_count
    for reason, indices in drops.items():
        report.drop(reason, indices)
    for kind, indices in fixes.items():
        count, why = len(indices), FIX_WHY[kind]
        report.add(kind, count, why, examples=[f"event {i}" for i in indices[:EXAMPLES]])
    report.add("metadata_time_removed", len(bad_metadata),
               "a metadata event (ph M: a process or thread name) with a ts or dur that is not a number makes the "
               "engine refuse the whole file; the field is left out (the name needs no time)",
               examples=bad_metadata[:EXAMPLES])
    if kept is None:
        kept = entries  # (every entry kept: one list of them, not two, while the fixes run)
    return kept, Survey(phases, pids, tids, zero_tid_pids, metadata_at, odd_ids, parts)


FIX_WHY = {
    "empty_entry_ignored": "an empty object {} in traceEvents (some writers close the list with one) carries no "
                           "event; it is left out",
    "missing_dur_set_to_zero": "an X event without a numeric dur is rejected by Perfetto; it is kept as a "
                               "0-duration slice",
    "negative_dur_clamped": "an X event with a negative dur (a producer's clock bug) would make every sum "
                            "over it wrong; it is kept as a 0-duration slice at its ts",
    "dur_out_of_range_set_to_zero": "ts + dur does not fit int64 nanoseconds; the event is kept as a "
                                    "0-duration slice at its ts",
    "id_coerced_to_text": "a pid/tid that is not an integer or a string (a list, an object, a float...) is "
                          "read as its JSON text, then gets a fresh id named after it",
    "name_or_cat_coerced_to_text": "a name or cat that is not a string is stored as its JSON text",
    "bad_scope_removed": "an instant scope (s) or flow binding point (bp) that is not a string is removed; "
                         "the importer's default applies",
    "args_not_object_wrapped": "args that are not a JSON object are stored as their JSON text in args.value",
}

# Kineto's top-level fields that the loader and the queries read, with the shape they must have.
_METADATA_SHAPES = {
    "deviceProperties": list, "distributedInfo": dict, "schemaVersion": (int, str),
    "baseTimeNanoseconds": int, "traceName": str, "displayTimeUnit": str,
}
_DEVICE_FIELDS = {"id": int, "name": str, "totalGlobalMem": (int, float), "computeMajor": int, "computeMinor": int}
_DISTRIBUTED_FIELDS = {"rank": int, "world_size": int, "backend": str, "pg_count": int}


def validate_metadata(metadata: dict, report: IngestReport) -> dict:
    """The top-level fields, each of the shape Kineto writes; a field of another shape is left out and
    reported (it is not an event: nothing of the timeline is lost). Every value stays writable as JSON."""
    out, ignored = {}, []
    for key, value in metadata.items():
        shape = _METADATA_SHAPES.get(key)
        if shape is not None and (not isinstance(value, shape) or isinstance(value, bool)):
            ignored.append(f"{key}: a {_json_type(value)}")
            continue
        if key == "deviceProperties":
            value = [_typed(d, _DEVICE_FIELDS, f"deviceProperties[{i}]", ignored) for i, d in enumerate(value)
                     if isinstance(d, dict) or ignored.append(f"deviceProperties[{i}]: a {_json_type(d)}")]
        elif key == "distributedInfo":
            value = _typed(value, _DISTRIBUTED_FIELDS, "distributedInfo", ignored)
        if not _writable(value):
            value = text_of(value)
            ignored.append(f"{key}: stored as text (not writable as JSON: too deep or an integer beyond 64 bits)")
        out[key] = value
    report.add("metadata_field_ignored", len(ignored),
               "a top-level field of the trace (deviceProperties, distributedInfo, ...) that does not have the "
               "shape Kineto writes is left out of kineto_metadata (or kept as text); no event is affected",
               examples=ignored)
    return out


def _typed(entry: dict, fields: dict, where: str, ignored: list) -> dict:
    kept = {}
    for key, value in entry.items():
        shape = fields.get(key)
        if shape is not None and (not isinstance(value, shape) or isinstance(value, bool)):
            ignored.append(f"{where}.{key}: a {_json_type(value)}")
            continue
        kept[key] = value
    return kept


def _writable(value) -> bool:
    try:
        orjson.dumps([value], option=orjson.OPT_NON_STR_KEYS)  # as deep as it is written: in the document
        return True
    except (orjson.JSONEncodeError, TypeError):
        return False


def _bad_time(ts) -> str | None:
    """Why `ts` cannot be a timestamp, or None when it can (ints were checked by the caller's fast path)."""
    kind = type(ts)
    if kind is Outlier:
        return ("lies farther from the trace's other timestamps than int64 nanoseconds can span (an outlier; "
                "the others keep their times)")
    if ts is None:
        return "is missing"
    if kind is float:
        if not math.isfinite(ts):
            return "is not finite"
        return None if -MAX_US <= ts <= MAX_US else "is out of range (beyond int64 nanoseconds)"
    if kind is int:
        return "is out of range (beyond int64 nanoseconds)"
    if kind is str:
        try:
            value = float(ts)
        except ValueError:
            return "is a string that is not a number"
        if not math.isfinite(value):
            return "is not finite"
        return None if -MAX_US <= value <= MAX_US else "is out of range (beyond int64 nanoseconds)"
    return f"is a {_json_type(ts)}, not a number"


def _fix_dur(e: Event, ts) -> str | None:
    dur = e.get("dur")
    kind = type(dur)
    if kind is str:
        try:
            value = float(dur)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            e["dur"] = 0
            return "missing_dur_set_to_zero"
        dur, kind = value, float
    elif kind is not int and kind is not float:
        e["dur"] = 0
        return "missing_dur_set_to_zero"
    elif kind is float and not math.isfinite(dur):
        e["dur"] = 0
        return "missing_dur_set_to_zero"
    if dur < 0:
        e["dur"] = 0
        return "negative_dur_clamped"
    if type(ts) is str:
        ts = float(ts)
    if ts + dur > MAX_US:
        e["dur"] = 0
        return "dur_out_of_range_set_to_zero"
    return None


def _json_type(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "JSON object"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def text_of(value) -> str:
    """A value's JSON text, for a field that must be a string (bounded: deep values are cut first)."""
    if _too_deep(value):
        value = _cut(value, 1)
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _too_deep(value) -> bool:
    """Whether `value` nests more than MAX_ARG_DEPTH containers (iterative: no recursion limit)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_ARG_DEPTH:
            return True
        if type(item) is dict:
            stack.extend((v, depth + 1) for v in item.values() if type(v) is dict or type(v) is list)
        elif type(item) is list:
            stack.extend((v, depth + 1) for v in item if type(v) is dict or type(v) is list)
    return False


def _cut(value, depth: int):
    if depth > MAX_ARG_DEPTH:
        return "<nested too deep>"
    if type(value) is dict:
        return {k: _cut(v, depth + 1) for k, v in value.items()}
    if type(value) is list:
        return [_cut(v, depth + 1) for v in value]
    return value
