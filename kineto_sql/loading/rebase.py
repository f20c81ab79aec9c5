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
from decimal import ROUND_FLOOR, Decimal

from kineto_sql.loading import ts_fields

# Above this a double cannot hold every nanosecond of a microsecond timestamp with 3 decimals.
REBASE_ABOVE_US = 10**12

# The integer part and the fraction are rewritten; an exponent after them is captured (group 4) by a
# lookahead that always succeeds, so the fields found are the same with or without one.
_TS_FIELD = re.compile(rb'("ts"\s*:\s*)(-?\d+)(\.\d*)?(?=([eE][-+]?\d+)?)(?=[,}\s eE])')
# The fields whose floor is not their integer part, or whose value is not their digits: a negative one
# with a fraction (-4999.5 lies below -4999) or one with an exponent.
TS_NEGATIVE_FRACTION_OR_EXPONENT = re.compile(rb'"ts"\s*:\s*(?:-\d+\.\d*[1-9]|-?\d+(?:\.\d*)?[eE])')
# What can need the rebase: a negative timestamp, or one of 13+ digits (>= 1e12 us) when some timestamp
# has a fraction. Searching for these rules it out for most traces without listing every ts.
TS_NEGATIVE = re.compile(rb'"ts"\s*:\s*-')
TS_13_DIGITS = re.compile(rb'"ts"\s*:\s*\d{13}')
TS_FRACTION = re.compile(rb'"ts"\s*:\s*-?\d+\.\d*[1-9]')
TS_NEGATIVE_OR_FRACTION = re.compile(rb'"ts"\s*:\s*(?:-|\d+\.\d*[1-9])')  # one scan rules both out


_UNREAD = object()  # ts_fields.read not run yet (its None means it declined)


class TimestampSpan:
    """The integer parts of every `ts` field of a text, seen a piece at a time."""

    def __init__(self):
        self.count, self.low, self.high, self.fractional = 0, None, None, False

    def see(self, text: bytes, fields=_UNREAD) -> None:
        """Adds the `ts` fields of `text`; `fields` is ts_fields.read(text) when the caller has it."""
        if fields is _UNREAD:
            fields = ts_fields.read(text)
        if fields is not None:  # the same answer from arrays (no exponent: the integer parts are the values)
            if len(fields.value):
                floors = fields.value - (fields.negative & fields.fractional)
                self._add(len(floors), int(floors.min()), int(floors.max()), bool(fields.fractional.any()))
            return
        self.see_by_regex(text)

    def see_by_regex(self, text: bytes) -> None:
        """see(), by the regex alone (where the arrays decline, and to test them against)."""
        matches = _TS_FIELD.findall(text)
        if not matches:
            return
        integers = [int(m[1]) for m in matches]
        # Whole microseconds are exact in a double up to 2^53; only a fraction at a large magnitude loses ns.
        fractional = any(m[2].strip(b".0") for m in matches if not m[3])
        if TS_NEGATIVE_FRACTION_OR_EXPONENT.search(text):
            for k, m in enumerate(matches):
                if _exact(m[1], m[2], m[3]):
                    value = _value(m[1], m[2], m[3])
                    integers[k] = int(value.to_integral_value(rounding=ROUND_FLOOR))
                    fractional = fractional or value != integers[k]
        self._add(len(integers), min(integers), max(integers), fractional)

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


def shift(text: bytes, base: int, fields=_UNREAD) -> bytes:
    """`text` with `base` subtracted from every `ts` field. Most fields only need their integer part
    rewritten; a negative one with a fraction, or one with an exponent, is rewritten as its exact decimal
    value less the base (see _exact). The shifted text is only parsed, never loaded: where it can, the
    shorter number is written in the place of the old one with spaces before it (ts_fields.rewrite), else
    the field is rewritten shorter. A base of 0 (the smallest timestamp is in [0, 1) us) changes nothing.
    `fields` is ts_fields.read(text) when the caller has it."""
    if base == 0:
        return text
    if not 0 < base < 2**62:
        fields = None
    elif fields is _UNREAD:
        fields = ts_fields.read(text)
    if fields is not None:
        shifted = fields.value - base
        if not (shifted < 0).any() and not (ts_fields.digits_of(shifted) > fields.end - fields.start).any():
            return ts_fields.rewrite(text, fields, shifted)

    def one(match: re.Match) -> bytes:
        head, integer, fraction, exponent = match.group(1), match.group(2), match.group(3) or b"", match.group(4)
        if _exact(integer, fraction, exponent):
            # the exponent stays in the text after the match: write the mantissa that, scaled by it, is
            # the value less the base
            scale = -int(exponent[1:]) if exponent else 0
            mantissa = _value(integer, fraction, b"") - Decimal(base).scaleb(scale)
            return head + format(mantissa, "f").encode()
        return head + str(int(integer) - base).encode() + fraction

    return _TS_FIELD.sub(one, text)


def _exact(integer: bytes, fraction: bytes, exponent: bytes | None) -> bool:
    """Whether a field needs its exact value: subtracting from the integer part alone would be wrong for
    a negative one with a fraction (-4999.5 + 5000 is 0.5, not 1.5) and for one with an exponent. An
    exponent of three digits or more is no clock's microseconds (a double reads it as inf, which validation
    drops, or as 0): such a field keeps the integer-part rule rather than a decimal of that many digits."""
    if exponent:
        return len(exponent.lstrip(b"eE+-")) <= 2
    return integer[:1] == b"-" and bool(fraction.strip(b".0"))


def _value(integer: bytes, fraction: bytes, exponent: bytes | None) -> Decimal:
    return Decimal((integer + fraction + (exponent or b"")).decode())


def rebase_text(raw: bytes, report) -> bytes:
    """The whole text, rebased when it needs it (the change recorded in `report`)."""
    if not may_need_rebase(raw):
        return raw
    fields = ts_fields.read(raw)  # read once, for the span and the shift
    span = TimestampSpan()
    span.see(raw, fields)
    base = span.base()
    if base is None:
        return raw
    span.report(report)
    return shift(raw, base, fields)
