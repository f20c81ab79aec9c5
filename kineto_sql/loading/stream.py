"""Parsing a trace file as it is decompressed, a piece of its events at a time, never holding the whole text.

A whole-text parse (source.parse_trace_probed) holds the text and the parsed events at once: on a 112 MB
trace that is 112 MB on top of ~470 MB of events, at the moment the loader peaks. Here the file is read
and decompressed in blocks, each run of whole events is parsed as soon as it is complete (the same cuts,
probe and checks as source._parse_in_pieces), and only the text around the event list is kept (Kineto's
top-level fields). What prepare reads from the text (whether a timestamp may need rebasing, a null, an
integer beyond int64) is answered from each piece as it passes, or, in the loader's child, by a helper
process that searches the file beside the parse (loading.text_facts).

A text whose timestamps need the rebase (loading.rebase) is read twice: once for where its timestamps
lie, then parsed with each piece rebased before its parse, as the whole text would have been. Anything
this cannot read exactly as the whole-text parse would (a trace small enough to parse whole, a cut that
does not parse, a corrupt file) gives None: the caller reads the file whole and prepares it as before, so
the result never depends on which path ran.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kineto_sql.errors import TraceInputError
from kineto_sql.loading import lazy_args, source
from kineto_sql.loading.rebase import Reading, TimestampSpan, shift
from kineto_sql.loading.text_facts import FactsHelper, Fallback, NeedsRebase, TextFacts

if TYPE_CHECKING:  # (imported where used, with numpy: only a trace that needs the rebase)
    from kineto_sql.loading import ts_fields

READ_BYTES = 4 << 20  # compressed (or plain) bytes read at a time
HEAD_BYTES = 8 << 20  # the text before the event list is searched this far for it
# The text held for the cuts is refilled to at least this many pieces (in whole blocks of READ_BYTES).
# With 4 MB pieces, more copied less (4: 13 ms less on a 35 MB trace) but raised the in-process load's
# peak RSS by ~10 MB a piece; with 512 KB pieces one block is added at a time either way.
_REFILL_PIECES = 2


@dataclass
class StreamedDoc:
    doc: dict  # the document, with its traceEvents parsed
    shallow: bool  # as parse_trace_probed: no event nests deeper than EVENT_DEPTH
    size: int  # bytes of JSON text
    args_may_change: bool  # the text shows a null or an integer beyond int64
    identity: tuple  # the file's (device, inode, size, mtime) when it was read
    rebased: TimestampSpan | None = None  # the timestamps, when the text was rebased as it was read
    string_ts: bool = False  # the text shows a `"ts"` written as a string
    args_texts: list = field(default_factory=list)  # the events' args kept as text, still to check (lazy_args)
    escape: bool = False  # the text shows a string escape the engine would keep as written (rawcheck.escape_token)


def file_identity(path: Path) -> tuple:
    info = os.stat(path)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def check_same_file(path: Path, identity: tuple) -> None:
    """Refuses, in one sentence, a file that is no longer the one read before (written since)."""
    if file_identity(path) != identity:
        raise TraceInputError(f"{path} changed while it was being read; load it again once it is written")


def _blocks(path: Path):
    """The file's text in blocks of at most READ_BYTES: decompressed (every gzip member) or as it is."""
    with open(path, "rb") as f:
        data = f.read(READ_BYTES)
        if data[:2] != b"\x1f\x8b":
            while data:
                yield data
                data = f.read(READ_BYTES)
            return
        inflate = source.inflate_module.decompressobj(wbits=31)
        while True:
            if len(data) < 2:
                more = f.read(READ_BYTES)
                if not more and not data:
                    if not inflate.eof:
                        raise Fallback  # truncated: the whole-file read says so, in its words
                    return
                data += more
            if inflate.eof:  # another member follows
                if data[:2] != b"\x1f\x8b":
                    raise Fallback
                inflate = source.inflate_module.decompressobj(wbits=31)
            try:
                out = inflate.decompress(data, READ_BYTES)
            except source.INFLATE_ERRORS:
                raise Fallback from None
            if out:
                yield out
            data = inflate.unused_data if inflate.eof else inflate.unconsumed_tail


def parse_file(path: Path, reading: Reading | None = None, facts_helper: bool = False) -> StreamedDoc | None:
    """The parsed trace, read in blocks; None when the whole-text path must read it (see the module doc).
    The path is one source.read_bytes accepts (it has been checked). `reading`: a second reading's limits
    (rebase.Reading; the rebase is then certain: the text is read for its span first). `facts_helper`: the
    first parse's text facts are searched by a helper process (text_facts.FactsHelper; where forking is
    safe and a second core is there to run it)."""
    try:
        identity = file_identity(path)
        if reading is None:
            try:
                facts = FactsHelper(lambda: _cut_after_braces(path)) if facts_helper else TextFacts(watch_rebase=True)
                try:
                    return _parse(path, identity, facts)
                finally:
                    facts.close()
            except NeedsRebase:
                pass  # (parsed again below, once this handler has let go of the first parse's frames)
        span, fields = _timestamp_span(path, reading)  # a first pass over the text: where the timestamps lie
        if span.base() is None:
            return _parse(path, identity, TextFacts(watch_rebase=False))
        return _parse(path, identity, TextFacts(watch_rebase=False), span=span, fields=fields)
    except Fallback:
        return None
    except OSError:
        return None  # read_bytes gives the sentence


def _timestamp_span(path: Path, reading: Reading | None = None) -> tuple[TimestampSpan, _FieldsRead]:
    """rebase.TimestampSpan of the whole text, read in blocks cut just after a `}` (no `ts` field holds
    one, so no field is cut, nor any stretch without braces that tells a metadata event's field), and the
    fields it read, for the shift of each piece (_FieldsRead)."""
    span, kept = TimestampSpan(reading), _FieldsRead()
    for text, at in _cut_after_braces(path):
        kept.see(span, text, at)
    return span, kept


def _cut_after_braces(path: Path):
    """The file's text in parts cut just after a `}` (the last of each block), with where each begins."""
    carry, at = b"", 0
    for block in _blocks(path):
        text = carry + block
        cut = text.rfind(b"}") + 1
        yield text[:cut], at
        carry = text[cut:]
        at += cut
    yield carry, at


class _FieldsRead:
    """The `ts` fields (ts_fields.TsFields, with which are metadata's) of the span pass's blocks, by where
    they lie in the whole text, so that the shift of a piece of the parse need not read them again (a third
    of a rebased trace's shift). Blocks and pieces are both cut just after a `}`, which no field holds, and
    a field's reading depends only on the bytes from its `"ts"` to the `}` after it: a piece's fields are
    those of the blocks in its range. A range that meets a block the arrays declined gives None (the
    shift reads it)."""

    def __init__(self):
        self._parts: list[tuple[int, ts_fields.TsFields]] = []
        self._declined: list[tuple[int, int]] = []
        self._whole: ts_fields.TsFields | None = None

    def see(self, span: TimestampSpan, text: bytes, at: int) -> None:
        # (with numpy: only a trace that needs the rebase comes here)
        from kineto_sql.loading import ts_fields

        fields = ts_fields.read(text)
        span.see(text, fields)
        if fields is None:
            self._declined.append((at, at + len(text)))
        elif len(fields.start):
            self._parts.append((at, fields))

    def of(self, start: int, size: int) -> ts_fields.TsFields | None:
        """The fields of the text's bytes start..start+size, positioned from `start`; None where not known."""
        import numpy as np

        from kineto_sql.loading import ts_fields

        end = start + size
        if any(low < end and start < high for low, high in self._declined):
            return None
        whole = self._joined()
        first, stop = np.searchsorted(whole.start, [start, end]).tolist()
        return ts_fields.TsFields(whole.start[first:stop] - start, whole.end[first:stop] - start,
                                  whole.value[first:stop], whole.negative[first:stop], whole.fractional[first:stop],
                                  whole.metadata[first:stop])

    def _joined(self) -> ts_fields.TsFields:
        import numpy as np

        from kineto_sql.loading import ts_fields

        if self._whole is None:
            parts = self._parts
            self._whole = ts_fields.TsFields(*(
                np.concatenate([getattr(f, name) + at if name in ("start", "end") else getattr(f, name)
                                for at, f in parts])
                if parts else np.zeros(0, dtype=np.int64 if name in ("start", "end", "value") else bool)
                for name in ("start", "end", "value", "negative", "fractional", "metadata")))
            self._parts = []
        return self._whole


def _parse(path: Path, identity: tuple, facts: TextFacts | FactsHelper, span: TimestampSpan | None = None,
           fields: _FieldsRead | None = None) -> StreamedDoc:
    """The streamed parse, shown to `facts` piece by piece (one watching the rebase stops it with
    NeedsRebase as soon as the text may need it); `span` (of a text that needs the rebase) rebases each
    piece before it is parsed, with the `fields` the span pass read."""
    base = span.base() if span is not None else None
    text_at = [0]  # where the text the pieces are cut from begins in the whole text

    def fix(piece: bytes, start: int = 0) -> bytes:
        """The piece that begins at `start` of the current text, rebased."""
        if base is None:
            return piece
        known = fields.of(text_at[0] + start, len(piece)) if fields is not None else None
        return shift(piece, base) if known is None else shift(piece, base, known)

    blocks = _blocks(path)
    buffer, size = bytearray(), 0
    for block in blocks:  # the head: up to and including `"traceEvents": [`
        buffer += block
        size += len(block)
        key = source.EVENTS_KEY.search(buffer)
        if key is not None:
            break
        if size > HEAD_BYTES:
            raise Fallback  # no event list near the top: not the shape pieces are cut from
    else:
        raise Fallback
    head = fix(bytes(buffer[:key.start()]))
    text, at = bytes(buffer), key.end()  # the events' text from `at` on
    del buffer
    probe, events, args_texts = source.DepthProbe(), [], []
    facts.see(head)
    while True:
        if len(text) - at < 2 * source.PIECE_BYTES:
            # The tail carried over and the new blocks joined once (the regexes need an immutable text, so it
            # is bytes), not the whole buffer copied for each piece and moved down after it.
            parts, have = [memoryview(text)[at:]], len(text) - at
            while have < _REFILL_PIECES * source.PIECE_BYTES:
                block = next(blocks, None)
                if block is None:
                    break
                parts.append(block)
                have += len(block)
                size += len(block)
            text_at[0] += at
            text, at = b"".join(parts), 0
            del parts
            if have < 2 * source.PIECE_BYTES:
                break  # the file is read: what is left ends the event list
        found = source.first_events(text, at, probe, fix, args_texts)
        if found is None:
            raise Fallback
        part, piece, at = found
        facts.see(piece)
        events.extend(part)
    if size <= 2 * source.PIECE_BYTES:
        raise Fallback  # small: the whole-text parse is the one used for these
    rest = fix(text[at:], at)
    del text
    facts.see(rest)
    found = source.last_events(rest, 0, probe, args_texts)
    if found is None:
        raise Fallback
    last, after = found
    events.extend(last)
    doc = source.loads_list(head + b'"traceEvents":[]' + rest[after:])
    if type(doc) is not dict or doc.get("traceEvents") != []:
        raise Fallback
    facts.finish()
    if facts.huge and args_texts:
        # An integer beyond int64 may be in args kept as text: they are parsed now, as the pieces would have
        # been (one orjson refuses, beyond 64 bits, is for the whole-text parse: source.parse_exact).
        try:
            lazy_args.materialize(events)
        except lazy_args.NotJSON:
            raise Fallback from None
        args_texts = []
    check_same_file(path, identity)
    doc["traceEvents"] = events
    return StreamedDoc(doc, probe.bounded, size, facts.null or facts.huge, identity, span, facts.string_ts,
                       args_texts, facts.escape)
