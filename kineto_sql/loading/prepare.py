"""Preparing a Kineto trace so Perfetto v52 keeps every event exactly.

The v52 JSON importer silently loses or mangles some Kineto input (see DESIGN.md and research/perfetto.md).
The trace is decoded into typed events (decode.py), each fix is one pass over them, in this order, and
each records what it changed in the IngestReport:

- rebase.py: absolute epoch-microsecond (or negative) timestamps get a whole number of microseconds
  subtracted from their digits, so every event keeps its nanoseconds;
- validate.py: every field checked; what cannot be an event is dropped and reported by index;
- ids.py: pids/tids Perfetto cannot hold get fresh ids; tid 0 gets a thread of its own;
- overlaps.py and flows.py (only for an engine that drops overlapping slices: engine_quirks.py): an X
  event that cannot nest goes to an overlap lane, and every flow arrow joins the slice it was written for;
- arg_values.py: integers beyond int64, null args, too deep args, strings the engine would keep escaped.

A trace none of them changed is loaded as its own bytes; any other is written back from the events.
"""
from __future__ import annotations

import contextlib
import gc
from pathlib import Path

import orjson

from kineto_sql.errors import TraceInputError
from kineto_sql.loading import engine_quirks
from kineto_sql.loading.arg_values import ArgsPass, fix_args
from kineto_sql.loading.decode import Decoded, decode_trace, encode_events
from kineto_sql.loading.flows import bind_flows
from kineto_sql.loading.ids import final_ids, remap_ids, split_tid_zero, zero_tid_pids
from kineto_sql.loading.overlaps import split_overlaps
from kineto_sql.loading.rebase import rebase
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.source import read_bytes
from kineto_sql.loading.validate import validate_and_survey, validate_metadata

# Events per piece when the rewritten trace is written out for the engine: ~1 MB of JSON on a GPU trace,
# so the text and the engine's parse of the piece before it overlap.
CHUNK_EVENTS = 4096


class PreparedTrace:
    """What the engine will ingest, the top-level metadata Perfetto ignores, and the report of changes.

    An unchanged trace is its own input bytes. A rewritten one is held as its events and written out
    piece by piece (`chunks()`) while the engine ingests, each piece's events released as it is written.
    `data` writes the whole text instead (the UI serves it; it is kept), the same bytes as the pieces joined.
    """

    def __init__(self, data: bytes | None, metadata: dict, report: IngestReport, events: list | None = None,
                 extras: dict | None = None, args_pass: ArgsPass | None = None):
        self._data = data
        self._events = events
        self._extras = extras or {}
        self._args_pass = args_pass  # (run on each piece as it is written; the report is whole once written)
        self.metadata = metadata
        self.report = report

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = b"".join(self.chunks())
        return self._data

    def verify(self) -> None:
        """Nothing is left to check once the text is written (the decoder read every byte of it)."""

    @property
    def size_hint(self) -> int:
        """The byte size of the text, or of the input when it is still to be written (for the engine choice)."""
        return len(self._data) if self._data is not None else self.report.input_bytes

    def chunks(self):
        """The trace text in pieces; for a rewritten trace, this consumes its events (one pass only)."""
        if self._data is not None:
            yield self._data
            return
        events, self._events = self._events, None
        if events is None:
            raise RuntimeError("this prepared trace was already written out once")
        yield b'{"traceEvents":' if events else b'{"traceEvents":['
        # Each piece is encoded as an array into one reused buffer, its `[` kept for the first piece and made
        # a `,` for the others, its `]` left off: one copy of the text (the bytes handed on) per piece.
        buffer = bytearray()
        args_pass, self._args_pass = self._args_pass, None
        for start in range(0, len(events), CHUNK_EVENTS):
            piece = events[start:start + CHUNK_EVENTS]
            events[start:start + CHUNK_EVENTS] = [None] * len(piece)
            if args_pass is not None:
                args_pass.piece(piece)
            encode_events(piece, self._extras, buffer)
            del piece
            if start:
                buffer[0] = 44  # ","
            with memoryview(buffer) as view:
                text = bytes(view[:-1])
            yield text
            del text
        del events, buffer
        if args_pass is not None:
            args_pass.finish()
        rest = orjson.dumps(self.metadata)
        yield b"]" + (b"," + rest[1:] if len(rest) > 2 else b"}")


def prepare_path(path: Path, on_size=None, check=None, mapped: bool = False, args_as_written: bool = False) -> PreparedTrace:
    """prepare() of the trace file at `path`; `on_size(bytes of JSON)` is called once the size is known,
    before the decode and the fixes (the engine choice and the memory check come first); `check(bytes of
    JSON so far)` while a gzip file is inflated; `mapped`: a plain file is mapped, not read (source.read_bytes);
    `args_as_written`: see prepare()."""
    raw = read_bytes(path, check, mapped)
    if on_size is not None:
        on_size(len(raw))
    return prepare(raw, path, args_as_written)


@contextlib.contextmanager
def _collector_paused():
    # The decode and the passes allocate a few hundred thousand objects and free none of them, which makes
    # CPython's cyclic collector walk them again and again; nothing here makes reference cycles.
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def prepare(raw: bytes, path: Path, args_as_written: bool = False) -> PreparedTrace:
    """The trace text `raw`, decoded and fixed. `args_as_written`: when the other fixes already rewrite the
    trace, the args pass (arg_values) runs on each piece as `chunks()` writes it, not before the first one,
    and its part of the report is there once the last piece is written (the loader's child: its pass over
    the args texts is then no longer on the path to the engine's first byte)."""
    with _collector_paused():
        return _prepare(raw, path, args_as_written)


def _prepare(raw: bytes, path: Path, args_as_written: bool = False) -> PreparedTrace:
    report = IngestReport(source=str(path), input_bytes=len(raw))
    decoded: Decoded = decode_trace(raw, path)
    events = decoded.events
    rebase(decoded, report)
    metadata = validate_metadata(decoded.metadata, report)
    if not events:
        raise TraceInputError(f"{path} has an empty event list; the profiler recorded nothing (check its schedule)")

    scanning = engine_quirks.drops_overlapping_slices()
    events, survey = validate_and_survey(events, report, decoded.odd_args, scan=scanning)
    report.events_by_phase = survey.phases
    if not any(ph in report.events_by_phase for ph in ("X", "i", "I", "B", "C")):
        if report.dropped:
            raise TraceInputError(f"{path}: none of its events can be loaded: {report.loss_sentences()[0]}")
        raise TraceInputError(f"{path} has no trace events with a duration or instant (ph X/i); "
                              "it is not a profiler trace")
    changed = bool(report.fixes or report.dropped or decoded.extras)
    # The metadata events: the file's, then those the fixes append.
    validated, metadata_events = len(events), survey.metadata_at
    maps = remap_ids(events, report, survey)
    changed |= maps is not None
    tid_zero = split_tid_zero(events, report, zero_tid_pids(survey, maps))
    changed |= bool(tid_zero)
    if scanning:
        scan = survey.scan.finish(events, final_ids(maps, tid_zero))
        survey.scan = None
        moved_to_lanes = split_overlaps(events, scan, report, metadata_events + list(range(validated, len(events))))
        changed |= bool(moved_to_lanes)
        changed |= bind_flows(events, scan, moved_to_lanes, report)
        del scan
    if changed and args_as_written:
        report.rewritten = True
        return PreparedTrace(None, metadata, report, events, decoded.extras, ArgsPass(decoded.extras, raw, report))
    changed |= fix_args(events, decoded.extras, raw, report)
    if not changed:
        return PreparedTrace(raw if type(raw) is bytes else bytes(raw), metadata, report)
    report.rewritten = True
    return PreparedTrace(None, metadata, report, events, decoded.extras)
