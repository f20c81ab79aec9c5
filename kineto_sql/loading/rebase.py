"""Rebasing timestamps in the text, before any float parse, so every event keeps its nanoseconds.

A double holds an absolute epoch-microsecond timestamp with 3 decimals only to ~0.25 us, and Perfetto
drops negative ones; such a trace's `ts` fields get a whole number of microseconds (the smallest integer
part) subtracted as text, and the offset goes in the report (kineto_metadata.ts_offset_ns adds it back).

The same reading serves the whole text (`rebase_text`) and a text read in blocks (`TimestampSpan` over the
blocks, then `shift` on each piece): no `ts` field holds a `,` or a `}`, so a text cut just after one of
those is searched and rewritten exactly as the whole.
"""
from __future__ import annotations

import re

from kineto_sql.loading import ts_fields

# Above this a double cannot hold every nanosecond of a microsecond timestamp with 3 decimals.
REBASE_ABOVE_US = 10**12

_TS_FIELD = re.compile(rb'("ts"\s*:\s*)(-?\d+)(\.\d*)?(?=[,}\s eE])')
# What can need the rebase: a negative timestamp, or one of 13+ digits (>= 1e12 us) when some timestamp
# has a fraction. Searching for these rules it out for most traces without listing every ts.
TS_NEGATIVE = re.compile(rb'"ts"\s*:\s*-')
TS_13_DIGITS = re.compile(rb'"ts"\s*:\s*\d{13}')
TS_FRACTION = re.compile(rb'"ts"\s*:\s*-?\d+\.\d*[1-9]')
TS_NEGATIVE_OR_FRACTION = re.compile(rb'"ts"\s*:\s*(?:-|\d+\.\d*[1-9])')  # one scan rules both out


class TimestampSpan:
    """The integer parts of every `ts` field of a text, seen a piece at a time."""

    def __init__(self):
        self.count, self.low, self.high, self.fractional = 0, None, None, False

    def see(self, text: bytes) -> None:
        matches = _TS_FIELD.findall(text)
        if not matches:
            return
        integers = [int(m[1]) for m in matches]
        # Whole microseconds are exact in a double up to 2^53; only a fraction at a large magnitude loses ns.
        self._add(len(integers), min(integers), max(integers), any(m[2].strip(b".0") for m in matches))

    def _add(self, count: int, low: int, high: int, fractional: bool) -> None:
        self.count += count
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)
        self.fractional = self.fractional or fractional

    def base(self) -> int | None:
        """The microseconds to subtract, or None when every timestamp is exact as it is."""
        if not self.count or (self.low >= 0 and (self.high < REBASE_ABOVE_US or not self.fractional)):
            return None
        return self.low

    def report(self, report) -> None:
        base = self.base()
        report.ts_offset_ns = base * 1000
        report.add("timestamps_rebased", self.count,
                   f"timestamps are {'negative' if self.low < 0 else 'absolute epoch microseconds'}: a double "
                   f"holds them only to ~0.25 us and Perfetto drops negative ones, so {base} us was subtracted "
                   "as text (kineto_metadata.ts_offset_ns adds it back)",
                   examples=[f"offset {base} us"])


class RebaseEvidence:
    """Whether a text may need the rebase, seen a piece at a time (a piece is whole `ts` fields): a
    negative timestamp, or one of 13+ digits together with some timestamp with a fraction."""

    def __init__(self):
        self.negative = self.thirteen_digits = self.fraction = False

    def see(self, text: bytes) -> None:
        self.thirteen_digits = self.thirteen_digits or bool(TS_13_DIGITS.search(text))
        if not self.negative and TS_NEGATIVE_OR_FRACTION.search(text):  # one scan rules both out
            self.negative = bool(TS_NEGATIVE.search(text))
            self.fraction = self.fraction or bool(TS_FRACTION.search(text))

    @property
    def may_rebase(self) -> bool:
        return self.negative or (self.thirteen_digits and self.fraction)


def may_need_rebase(text: bytes) -> bool:
    """False when the text certainly needs no rebase (the common case: one or two quick searches)."""
    if not TS_NEGATIVE_OR_FRACTION.search(text):
        return False
    evidence = RebaseEvidence()
    evidence.see(text)
    return evidence.may_rebase


def shift(text: bytes, base: int) -> bytes:
    """`text` with `base` subtracted from the integer part of every `ts` field. The shifted text is only
    parsed, never loaded: where it can, the shorter number is written in the place of the old one with
    spaces before it (ts_fields.rewrite), else the field is rewritten shorter."""
    fields = ts_fields.read(text) if 0 < base < 2**62 else None
    if fields is not None:
        shifted = fields.value - base
        if not (shifted < 0).any() and not (ts_fields.digits_of(shifted) > fields.end - fields.start).any():
            return ts_fields.rewrite(text, fields, shifted)

    def one(match: re.Match) -> bytes:
        return match.group(1) + str(int(match.group(2)) - base).encode() + (match.group(3) or b"")

    return _TS_FIELD.sub(one, text)


def rebase_text(raw: bytes, report) -> bytes:
    """The whole text, rebased when it needs it (the change recorded in `report`)."""
    if not may_need_rebase(raw):
        return raw
    span = TimestampSpan()
    span.see(raw)
    base = span.base()
    if base is None:
        return raw
    span.report(report)
    return shift(raw, base)
