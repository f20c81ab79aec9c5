"""Preparing a Kineto trace so Perfetto v52 keeps every event exactly.

The v52 JSON importer silently loses or mangles some Kineto input (see DESIGN.md and
research/perfetto.md): it drops an X event that overlaps another on the same thread without nesting
(and then binds that event's flow to the wrong slice), rounds absolute epoch-microsecond timestamps
to the nearest 0.25 us, and maps negative, huge and string pids/tids onto small numbers that collide.
This module fixes the input first and records each change in an IngestReport:

- timestamps at or above 1e12 us are rebased textually (before any float parse) by a whole number of
  microseconds, so every event keeps its nanoseconds; the offset is in the report (loading.rebase);
- pids/tids Perfetto cannot hold get fresh ids in a reserved range, with their original in the name;
- an X event that cannot nest goes to an "overlap lane" of the same process (a new thread named after
  the original thread), and the flow events that belong to it follow it there;
- a text that shows a string escape is written again by orjson, every character raw but those JSON must
  escape, since the importer keeps the escapes of a string without an escaped quote as written
  (rawcheck.escape_token); the strings it will still keep escaped are reported.
"""
from __future__ import annotations

import contextlib
import gc
import json
import math
import re
import weakref
from collections import Counter
from decimal import Decimal, InvalidOperation
from pathlib import Path

import orjson

from kineto_sql.errors import TraceInputError
from kineto_sql.loading import lazy_args
from kineto_sql.loading.flows import bind_flows
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.scan import TraceScan, scan_events
from kineto_sql.loading.rawcheck import escape_token, integer_beyond_int64, null_token
from kineto_sql.loading.rebase import REBASE_ABOVE_US, TS_STRING, Reading, rebase_text
from kineto_sql.loading.source import parse_trace, parse_trace_probed, read_bytes
from kineto_sql.loading.stream import check_same_file, parse_file
from kineto_sql.loading.validate import (DEEP_ARGS_WHY, UINT32_MAX, Survey, cut_deep, validate_and_survey,
                                         validate_metadata)

# Fresh ids live high in the uint32 range, far above real pids, tids and stream numbers.
LANE_TID_BASE = 4_000_000_000
REMAPPED_TID_BASE = 4_100_000_000
REMAPPED_PID_BASE = 4_200_000_000
TID_ZERO_BASE = 4_150_000_000

_LONG_DIGITS = re.compile(rb"\d{19}")


# Events per piece when the rewritten trace is written out for the engine: ~1 MB of JSON on a GPU trace.
# Small enough that each piece's text reuses memory the pieces before it freed: the loader's child hands
# its freed heap back to the system only every few pieces (background.TRIM_BYTES), and a 4 MB piece
# after each hand-back faulted all its pages in again (16384 events a piece: the child's writing of the
# 112 MB 4x replica took 0.47-0.49 s, at 4096 events 0.28-0.30 s, with the same hand-backs; 3 runs each).
CHUNK_EVENTS = 4096


class PreparedTrace:
    """What the engine will ingest, the top-level metadata Perfetto ignores, and the report of changes.

    An unchanged trace is its own input bytes. A rewritten one is held as its events and written out
    piece by piece (`chunks()`) while the engine ingests, each piece's events released as it is written,
    so the parsed events, the output text and the engine's heap never all peak at once. `data` writes
    the whole text instead (the UI serves it; it is kept), and is the same bytes as the pieces joined.
    """

    def __init__(self, data: bytes | None, metadata: dict, report: IngestReport, events: list | None = None,
                 spent: list | None = None, checks: lazy_args.Checks | None = None):
        self._data = data
        # The args the parse kept as text, to check as JSON before the load may succeed (verify()).
        self._checks = checks
        self._events = events
        # What the fixes looked the events up with (the scan's columns, the flow pass's maps: ~55 ms to free
        # on hta_trace_diff_control's 4x replica), freed once the first piece is out, while the engine parses
        # it, rather than before it; they are alive at the child's peak (the end of the fixes) either way.
        self._spent = spent
        self.metadata = metadata
        self.report = report
        if events is not None:
            # The held events are a few million objects that live until they are written out; the cyclic
            # collector would walk them all on each full pass (and once per generation after prepare
            # re-enables it) and find nothing: they hold no cycles. Kept out of its generations until
            # chunks() has written them (or this trace is dropped unwritten).
            gc.freeze()
            self._frozen = weakref.finalize(self, gc.unfreeze)

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = b"".join(self.chunks())
            self.verify()
        return self._data

    def verify(self) -> None:
        """Checks the args the parse kept as text (lazy_args) as JSON; the load's error for one that is not.
        Once the text is written: the loader's child runs it beside the engine's end-of-file pass."""
        checks, self._checks = self._checks, None
        if checks is not None:
            checks.run()

    @property
    def size_hint(self) -> int:
        """The byte size of the text, or of the input when it is still to be written (for the engine choice)."""
        return len(self._data) if self._data is not None else self.report.input_bytes

    def chunks(self):
        """The trace text in pieces; for a rewritten trace, this consumes its events (one pass only)."""
        if self._data is not None:
            yield self._data
            return
        events = self._events
        if events is None:
            raise RuntimeError("this prepared trace was already written out once")
        self._events = None
        spent, self._spent = self._spent, None
        try:
            yield b'{"traceEvents":['
            for start in range(0, len(events), CHUNK_EVENTS):
                if start:
                    spent = None
                piece = events[start:start + CHUNK_EVENTS]
                events[start:start + CHUNK_EVENTS] = [None] * len(piece)
                try:
                    text = orjson.dumps(piece, default=lazy_args.write_default)
                except orjson.JSONEncodeError:  # an arg of 252-254 levels: writable alone, not in a list
                    text = _dumps_deep(piece)
                del piece
                yield (b"," + text[1:-1]) if start else text[1:-1]
        finally:
            del events, spent
            self._frozen()
        rest = orjson.dumps(self.metadata)
        yield b"]" + (b"," + rest[1:] if len(rest) > 2 else b"}")


def _dumps_deep(events: list) -> bytes:
    """The JSON array of `events` where one nests deeper than orjson writes (it stops at 255 levels; an
    arg value passes _scan_args up to 254, and the event and the list add 3): those by the stdlib."""
    texts = []
    for e in events:
        try:
            texts.append(orjson.dumps(e, default=lazy_args.write_default))
        except orjson.JSONEncodeError:
            texts.append(json.dumps(e, separators=(",", ":"), ensure_ascii=False, default=_args_of_text).encode())
    return b"[" + b",".join(texts) + b"]"


def _args_of_text(value):
    if type(value) is lazy_args.ArgsText:
        return orjson.loads(value.text)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def prepare(raw: bytes, path: Path) -> PreparedTrace:
    """The trace text `raw`, prepared (the loader reads files with prepare_path)."""
    holder = [raw]
    del raw
    with _collector_paused():
        return _prepare(holder, path)


def prepare_path(path: Path, on_size=None, facts_helper: bool = False) -> PreparedTrace:
    """prepare() of the trace file at `path`, read as it is parsed (loading.stream) so that its whole text
    is never held beside the parsed events; where that cannot stand for the whole-text parse, the file is
    read whole and prepared as prepare() does. `on_size(bytes of JSON)` is called once the size is known,
    before the fixes run. `facts_helper`: the text's searches run in a helper process (stream.parse_file)."""
    with _collector_paused():
        try:
            return _prepare_file(path, on_size, None, facts_helper)
        except _RebaseAgain as again:
            return _prepare_file(path, None, again.reading)


def _prepare_file(path: Path, on_size, reading: Reading | None, facts_helper: bool = False) -> PreparedTrace:
    streamed = parse_file(path, reading, facts_helper)
    if streamed is None:
        holder = [read_bytes(path)]
        if on_size is not None:
            on_size(len(holder[0]))
        return _prepare(holder, path, reading)
    if on_size is not None:
        on_size(streamed.size)
    report = IngestReport(source=str(path), input_bytes=streamed.size)
    if streamed.rebased is not None:
        streamed.rebased.report(report)
    checks = lazy_args.Checks(streamed.args_texts, lambda: _refuse_args(path)) if streamed.args_texts else None
    return _prepare_parsed(streamed.doc, streamed.shallow, lambda: streamed.args_may_change, [], report,
                           path, lambda: _text_again(path, streamed.identity), reading, string_ts=streamed.string_ts,
                           checks=checks, escape=streamed.escape)


def _refuse_args(path: Path):
    """The load's error for args kept as text that are not JSON: the whole-file parse's sentence."""
    parse_trace(read_bytes(path), path)
    raise TraceInputError(f"{path} is not valid JSON in an event's args; re-export the trace from torch.profiler")


def _text_again(path: Path, identity: tuple) -> bytes:
    """The text of a trace that needs no change, read again (the streamed parse did not keep it)."""
    raw = read_bytes(path)
    check_same_file(path, identity)
    return raw


@contextlib.contextmanager
def _collector_paused():
    # The parse and the passes below allocate millions of containers and free none of them, which makes
    # CPython's cyclic collector run full passes over all of them again and again (about half of this
    # function's CPU time on a 30 MB trace). Nothing here makes reference cycles, so it is paused.
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _prepare(holder: list, path: Path, reading: Reading | None = None) -> PreparedTrace:
    raw = holder.pop()
    report = IngestReport(source=str(path), input_bytes=len(raw))
    rebased = rebase_text(raw, report, reading)
    # the text as written, while the parse may still show the rebase must be chosen again
    string_ts = bool(TS_STRING.search(raw))
    original = [raw] if (report.fix_count("timestamps_rebased") or string_ts) and reading is None else []
    del raw
    doc, shallow = parse_trace_probed(rebased, path)
    text = [rebased]
    del rebased
    try:
        return _prepare_parsed(doc, shallow, lambda: null_token(text[0]) or integer_beyond_int64(text[0]), text,
                               report, path, text.pop, reading, original.clear, string_ts,
                               escape=escape_token(text[0]))
    except _RebaseAgain as again:
        del doc, text
        return _prepare(original, path, again.reading)


class _RebaseAgain(Exception):
    """The rebase must be chosen again, within `reading`'s limits (see _settle_rebase)."""

    def __init__(self, reading: Reading):
        super().__init__(reading)
        self.reading = reading


def _prepare_parsed(doc, shallow: bool, text_shows_arg_fix, text: list, report: IngestReport, path: Path,
                    unchanged_text, reading: Reading | None = None, rebase_settled=lambda: None,
                    string_ts: bool = False, checks: lazy_args.Checks | None = None,
                    escape: bool = False) -> PreparedTrace:
    """The fixes, on the parsed document. `text` holds the input text while it may still be needed (it is
    emptied once the trace is certain to be rewritten); `text_shows_arg_fix()` says whether the text shows
    a null or an integer beyond int64; `unchanged_text()` gives the text an unchanged trace is loaded as.
    `reading`: the limits the rebase was chosen with (None the first time); raises _RebaseAgain when the rebase
    must be chosen again, else calls `rebase_settled()`. `string_ts`: the text shows a timestamp written as
    a string. `checks`: the events' args kept as text (lazy_args), to check as JSON before the load ends.
    `escape`: the text may hold a string escape the engine would keep as written."""
    fixes_before = len(report.fixes)
    if isinstance(doc, list):
        events, metadata = doc, {}
        _settle_times(events, {}, report, reading, string_ts, checks)
    elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events = doc["traceEvents"]
        _settle_times(events, doc, report, reading, string_ts, checks)
        metadata = validate_metadata({k: v for k, v in doc.items() if k != "traceEvents"}, report)
    else:
        raise TraceInputError(
            f"{path} is JSON but not a Kineto / Chrome trace (no traceEvents list); "
            "pass the file torch.profiler exported")
    rebase_settled()
    if not events:
        raise TraceInputError(f"{path} has an empty event list; the profiler recorded nothing (check its schedule)")

    events, survey = validate_and_survey(events, report)
    report.events_by_phase = survey.phases
    if not any(ph in report.events_by_phase for ph in ("X", "i", "I", "B", "C")):
        if report.dropped:
            raise TraceInputError(f"{path}: none of its events can be loaded: {report.loss_sentences()[0]}")
        raise TraceInputError(f"{path} has no trace events with a duration or instant (ph X/i); "
                              "it is not a profiler trace")

    changed = report.ts_offset_ns != 0 or bool(report.dropped) or len(report.fixes) > fixes_before
    validated = len(events)
    maps = _remap_ids(events, report, survey)
    changed |= maps is not None
    changed |= _split_tid_zero(events, report, _zero_tid_pids(survey, maps))
    # The args pass changes or reports something only if the text shows an integer beyond int64, a null
    # or a value nested deeper than a JSON writer goes; on most traces the text rules all three out.
    args_may_change = not shallow or text_shows_arg_fix()
    # A string escape the engine would keep as written: the trace is written by orjson, which writes every
    # character raw but those JSON must escape (rawcheck.escape_token).
    changed |= escape
    if changed:  # rewritten for certain: the input text is not needed any more
        text.clear()
        doc = None
    # The metadata events: the file's, then those the fixes above appended.
    metadata_events = survey.metadata_at + list(range(validated, len(events)))
    del survey
    scan = scan_events(events)
    moved_to_lanes = _split_overlaps(events, scan, report, metadata_events)
    changed |= bool(moved_to_lanes)
    spent = [scan]
    changed |= bind_flows(events, scan, moved_to_lanes, report, keep=spent)
    del scan
    if args_may_change:
        _materialize(events, checks)
        changed |= _scan_args(events, report)
    if escape:
        _report_kept_escapes(events, report)

    if not changed:
        del events, doc, spent
        return PreparedTrace(unchanged_text(), metadata, report, checks=checks)
    # Peak memory is the parsed events plus the text on either side: let the input text go first, and
    # write the output only while the engine reads it (PreparedTrace.chunks).
    text.clear()
    del doc
    report.rewritten = True
    return PreparedTrace(None, metadata, report, events, spent, checks)


def _report_kept_escapes(events: list, report: IngestReport) -> None:
    """Counts the strings the engine will still keep escaped: one with a backslash or a control character
    (which JSON must write escaped) and no quote (the engine unescapes a string that holds an escaped
    quote, and then every escape in it)."""
    kept: list[str] = []

    def look(value) -> None:
        if type(value) is str:
            if '"' not in value and ("\\" in value or any(c < " " for c in value)):
                kept.append(value)
        elif type(value) is dict:
            for key, item in value.items():
                look(key)
                look(item)
        elif type(value) is list:
            for item in value:
                look(item)

    for e in events:  # (args kept as text hold no escape: lazy_args parses those)
        look(e)
    report.add("escape_kept_by_engine", len(kept),
               "a string with a backslash or a control character (a newline, a tab) and no quote: Perfetto v52's "
               "JSON importer unescapes only strings that hold an escaped quote, so it stores these escapes as "
               "written (a newline as a backslash and an n); every other escaped character was written as itself",
               examples=[repr(text[:60]) for text in kept[:5]])


def _materialize(events: list, checks: lazy_args.Checks | None) -> None:
    """The args kept as text parsed back (for the passes that change args), or the load's error for one
    that is not JSON."""
    if checks is not None:
        try:
            lazy_args.materialize(events)
        except lazy_args.NotJSON:
            checks.refuse()


# -- what the textual rebase cannot see ----------------------------------------------------------------

_NUMBER = (int, float)


def _settle_times(events: list, doc: dict, report: IngestReport, reading: Reading | None, string_ts: bool,
                  checks: lazy_args.Checks | None = None) -> None:
    """_settle_rebase where the text was rebased (a base of 0 too: a field below the events may have set
    it, or it is a second reading); where it was not, a timestamp written as a string that needs the rebase
    (negative, or a fraction at >= 1e12 us) has the text read again with the base at or below it, and a
    metadata event's negative one is written as 0 (the engine drops the event, its name with it)."""
    if report.fix_count("timestamps_rebased") or reading is not None:
        _settle_rebase(events, doc, report, reading, checks)
        return
    if not string_ts:
        return
    texts = _string_times([e for e in events if type(e) is dict and type(e.get("ts")) is str])
    times = [value for e, value in texts if e.get("ph") != "M"]
    if times and (min(times) < 0 or any(abs(v) >= REBASE_ABOVE_US and v != v.to_integral_value() for v in times)):
        raise _RebaseAgain(_second_reading(events, 0, texts))
    zeroed = [e for e, value in texts if e.get("ph") == "M" and value < 0]
    for e in zeroed:
        e["ts"] = "0"
    report.add("metadata_ts_zeroed", len(zeroed), "a metadata event's negative timestamp written as a string "
               "(the engine drops an event with a negative time, its name with it) is written as 0")


def _second_reading(events: list, base_us: int, texts: list[tuple[dict, Decimal]]) -> Reading:
    """The limits of a second reading: the floor a little below the events' own smallest time (numbers
    as parsed, less the double's error at their shifted size; strings exactly), and the base at or
    below the smallest string time."""
    numbers = [e["ts"] for e in _own_numeric(events)]
    strings = [value for e, value in texts if e.get("ph") != "M"]
    lows = []
    if numbers:
        smallest = min(numbers)
        error = math.ulp(max(abs(smallest), abs(max(numbers)))) * 4 if isinstance(smallest, float) else 0
        lows.append(math.floor(smallest - error) + base_us)
    if strings:
        lows.append(math.floor(min(strings)))
    return Reading(floor=min(lows) - 1 if lows else None, low=math.floor(min(strings)) if strings else None)


def _settle_rebase(events: list, doc: dict, report: IngestReport, reading: Reading | None,
                   checks: lazy_args.Checks | None = None) -> None:
    """The rebase (loading.rebase) rewrites every `"ts": number` of the text, before the parse can tell
    an event's own timestamp from an arg or a top-level field that happens to be named ts, and it does not
    see a timestamp written as a string. After the parse, in one pass over the events:

    - a numeric string ts (validate keeps those, the engine reads them) gets the same base subtracted,
      exactly, as a decimal string (a metadata event's stays at 0 or above, as rebase.shift writes them);
    - when the events' own numeric ts are fewer than the fields the rebase rewrote, every other field
      named ts (in args, nested, in lists, at the top level) gets the offset back (exact for an integer;
      a fraction to the double's precision at its shifted value), and the report says how many.

    The text is read again (_RebaseAgain with a rebase.Reading) when the base is wrong for the events:
    a string timestamp below it (it would turn negative: the base is kept at or below it), or a field
    named ts outside the events below their times, which leaves theirs large (>= 1e12 us, where a double
    keeps a fraction only to ~0.25 us): every field that is no event's and lies more than 1 us below the
    events' smallest time (as parsed, less the double's error at its shifted size: _second_reading) is left
    out, so the base is at most the floor of that time and a few us below it at most. Should the second
    reading still leave them large, the report says so."""
    base_us = report.ts_offset_ns // 1000
    own, strings = 0, []
    for e in events:
        if type(e) is dict:
            kind = type(e.get("ts"))
            if kind is int or kind is float:
                own += 1
            elif kind is str:
                strings.append(e)
    texts = _string_times(strings)
    lowest_text = min((value for e, value in texts if e.get("ph") != "M"), default=None)
    below = lowest_text is not None and lowest_text < base_us
    mismatch = own != report.fix_count("timestamps_rebased")
    # left large: a fraction there may already be gone in the parse (a double at 1e15 us has no 0.01), and
    # the engine reads a string as a double too
    rounded = []
    if mismatch:
        rounded = [e.get("name") for e in _own_numeric(events) if type(e["ts"]) is float and abs(e["ts"]) >= REBASE_ABOVE_US]
        rounded += [e.get("name") for e, value in texts if e.get("ph") != "M" and abs(value - base_us) >= REBASE_ABOVE_US]
    if reading is None and (below or rounded):
        raise _RebaseAgain(_second_reading(events, base_us, texts))
    if base_us:
        _shift_string_ts(texts, base_us, report)
    if not mismatch:
        return
    restored = [0]

    def restore(value, skip=None) -> None:
        """Gives the offset back to every number under a key ts in `value` (but the key `skip`'s)."""
        items = value.items() if type(value) is dict else enumerate(value)
        for key, item in items:
            if key == skip:
                continue
            if type(item) is dict or type(item) is list:
                restore(item)
            elif key == "ts" and type(item) in _NUMBER:
                value[key] = item + base_us
                restored[0] += 1

    if base_us:  # (a base of 0 moved nothing)
        _materialize(events, checks)  # (a field named ts may be in args kept as text)
        for e in events:
            if type(e) is dict:
                restore(e, skip="ts")  # an event's fields but its own ts
        restore(doc, skip="traceEvents")  # the document's own fields (its events are done above)
    report.add("nested_ts_restored", restored[0],
               "a field named ts that is not an event's own timestamp (an arg, a top-level field) was shifted "
               "with the timestamps by the rebase; it has its value back (an integer exactly, a fraction to the "
               "precision of a double at its shifted value)",
               examples=[f"offset {base_us} us added back"])
    report.add("timestamps_not_exact", len(rounded),
               f"a field named ts outside the events set the rebase base ({base_us} us) below their times, so "
               "these events' timestamps stay large and keep a double's precision (~0.25 us at epoch "
               "microseconds), not every nanosecond", examples=[str(name) for name in rounded])


def _own_numeric(events: list):
    """The events (not metadata) whose own ts is a number."""
    return (e for e in events if type(e) is dict and e.get("ph") != "M" and type(e.get("ts")) in _NUMBER)


def _string_times(events: list[dict]) -> list[tuple[dict, Decimal]]:
    """The events whose ts is a numeric string, with its exact value (the others: validate says why)."""
    found = []
    for e in events:
        try:
            value = Decimal(e["ts"].strip())
        except InvalidOperation:
            continue
        if value.is_finite():
            found.append((e, value))
    return found


def _shift_string_ts(texts: list[tuple[dict, Decimal]], base_us: int, report: IngestReport) -> None:
    for e, value in texts:
        value -= base_us
        if value < 0 and e.get("ph") == "M":
            value = Decimal(0)
        e["ts"] = format(value, "f")
    report.add("string_ts_rebased", len(texts),
               f"a timestamp written as a string is not in the text's number fields the rebase rewrites; the same "
               f"{base_us} us is subtracted from it exactly, so it stays on the clock of the others",
               examples=[f"offset {base_us} us"])


# -- pids and tids ---------------------------------------------------------------------------------

def _valid_id(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 0 <= value <= UINT32_MAX:
        return value
    if isinstance(value, str) and value.isdigit() and int(value) <= UINT32_MAX:
        return int(value)
    return None


_MISSING = object()


def _remap_ids(events: list[dict], report: IngestReport, survey: Survey) -> dict | None:
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
                extra.append({"ph": "M", "name": "process_name", "pid": e["pid"], "tid": 0, "args": {"name": name}})
            elif key == "tid" and (original_key, originals[key]) not in named_tids:
                extra.append({"ph": "M", "name": "thread_name", "pid": e.get("pid"), "tid": e["tid"],
                              "args": {"name": name}})
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


def _zero_tid_pids(survey: Survey, maps: dict | None) -> set | None:
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


def _split_tid_zero(events: list[dict], report: IngestReport, zero_pids: set | None = None) -> bool:
    """The importer gives tid 0 the thread `tid := pid`, merging it with the process's main thread when
    that thread also has events (Kineto writes other python threads' frames with tid 0): give it its own.
    `zero_pids`: the pids of the X / i / I / s / t / f events with tid 0, when already known."""
    if zero_pids is None:
        zero_pids = {e.get("pid") for e in events if e.get("tid") == 0 and e.get("ph") in ("X", "i", "I", "s", "t", "f")}
        zero_pids.discard(0)
        zero_pids.discard(None)
    if not zero_pids:
        return False
    clash = {e.get("pid") for e in events if e.get("pid") in zero_pids and e.get("tid") == e.get("pid")
             and e.get("ph") != "M"}
    if not clash:
        return False
    fresh = {pid: TID_ZERO_BASE + i for i, pid in enumerate(sorted(clash, key=repr))}
    moved = 0
    for e in events:
        if e.get("tid") == 0 and e.get("pid") in fresh and e.get("ph") != "M":
            e["tid"] = fresh[e["pid"]]
            moved += 1
    for pid, tid in fresh.items():
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": "tid 0"}})
    report.add("tid_zero_split", moved,
               "events written with tid 0 would land on the process's main thread (the importer reads tid 0 as "
               f"tid = pid) and merge with it; they keep their own thread (tid {TID_ZERO_BASE}+, named 'tid 0')",
               examples=[f"pid {pid}" for pid in fresh])
    return True


# -- overlapping slices ----------------------------------------------------------------------------

def _split_overlaps(events: list[dict], scan: TraceScan, report: IngestReport,
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
            thread_names = {(e.get("pid"), e.get("tid")): (lazy_args.args_of(e) or {}).get("name")
                            for e in metadata if e.get("ph") == "M" and e.get("name") == "thread_name"}
        pid, tid = scan.tracks[track]
        lane_tids = [tid]
        base_name = thread_names.get((pid, tid)) or f"thread {tid}"
        for lane in range(1, len(lane_stacks)):
            lane_tids.append(next_tid)
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": next_tid,
                           "args": {"name": f"{base_name} (overlap lane {lane})"}})
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


def _scan_args(events: list[dict], report: IngestReport) -> bool:
    """One pass over every event's args: integers outside int64 become their exact decimal text (Perfetto
    stores args as int64 and would wrap them), and args with a JSON null are counted (Perfetto stores no row)."""
    nulls, huge = Counter(), []
    low, high = -2**63, 2**63

    def fix(value):
        if type(value) is int and not low <= value < high:
            huge.append(value)
            return str(value)
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    deep = []
    for index, e in enumerate(events):
        args = e.get("args")
        if not isinstance(args, dict):
            continue
        for key, value in args.items():
            kind = type(value)
            if value is None:
                nulls[key] += 1
            elif kind is int:
                if not low <= value < high:
                    args[key] = fix(value)
            elif kind is dict or kind is list:
                try:
                    text = orjson.dumps(value)
                except orjson.JSONEncodeError:
                    # an integer beyond 64 bits inside (the exact parse kept it), or deeper than any JSON
                    # writer goes (the parser took it): the integers become text, and what is still too
                    # deep to write is cut
                    found = len(huge)
                    try:
                        fixed = fix(value)
                        orjson.dumps(fixed)
                        args[key] = fixed
                    except (orjson.JSONEncodeError, RecursionError):
                        del huge[found:]  # cut with the rest, not stored as text
                        args[key] = cut_deep(value)
                        deep.append(index)
                    continue
                if _LONG_DIGITS.search(text):
                    args[key] = fix(value)  # only a run of 19+ digits can be an integer beyond int64
    report.add("integer_beyond_int64_as_string", len(huge),
               "an arg integer outside int64 would wrap to a wrong negative number in Perfetto; it is stored "
               "as its exact decimal text", examples=huge)
    report.add("null_arg_not_stored", sum(nulls.values()),
               "Perfetto stores no row for an arg whose JSON value is null (SQL has no typed null arg); "
               "the event itself is kept",
               examples=[f"{k} x{n}" for k, n in nulls.most_common(5)])
    report.add("args_too_deep_cut", len(deep), DEEP_ARGS_WHY, examples=[f"event {i}" for i in deep])
    return bool(huge or deep)
