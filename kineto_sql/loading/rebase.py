"""Rebasing timestamps in the text, before any float parse, so every event keeps its nanoseconds.

A double holds an absolute epoch-microsecond timestamp with 3 decimals only to ~0.25 us, and Perfetto
drops negative ones; such a trace's `ts` fields get a whole number of microseconds (the smallest integer
part) subtracted as text, and the offset goes in the report (kineto_metadata.ts_offset_ns adds it back).

The base comes from the timestamps of the events the engine places in time. A metadata event's (ph M:
process and thread names) places nothing, and writers put anything there: HTA's MTIA trace writes 0.0
beside events at 3.6e12 us, which made the base 0, and the same beside epoch microseconds left every
timestamp to the double's ~0.25 us (299 of 300 off, by up to 15 ns, in tests/test_rebase.py's kind of
trace). So a `ts` field is left out of the span when a `"ph": "M"` is a
field of the same object: both lie in one stretch of text without a `{` or `}` (a field the test cannot
place counts, as before). Every field is still shifted; a metadata one the base would make negative is
written as 0 instead (the engine's sorter drops an event with a negative time, names included). Only
when the other events need no rebase do the metadata timestamps decide it, as they always did (a
negative one still shifts the whole trace up). A field named ts that is no event's own (an arg) cannot be
told apart in the text, nor a timestamp written as a string seen; prepare._settle_rebase finds both after
the parse, and has the text read again (a `Reading`) when such a field set the base below the events' times
or a string timestamp lies below the base.

The same reading serves the whole text (`rebase_text`) and a text read in blocks (`TimestampSpan` over the
blocks, then `shift` on each piece): no `ts` field holds a `,` or a `}`, and a text cut just after a `}`
(or between two whole events) splits no stretch without braces, so it is searched and rewritten exactly
as the whole.

Only the searches (RebaseEvidence, may_need_rebase) run on every trace; numpy and ts_fields are imported
where a rebase is read or made, so the loader child's common path never imports them (~58 ms).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (imported where used: numpy, only where a rebase is read or made)
    import numpy as np

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
TS_STRING = re.compile(rb'"ts"\s*:\s*"')  # a timestamp written as a string: no number field shows it
TS_NEGATIVE_OR_FRACTION = re.compile(rb'"ts"\s*:\s*(?:-|\d+\.\d*[1-9])')  # one scan rules both out
# A timestamp that is negative, has a fraction or is written as a string: one scan of a piece rules all
# three out (the streamed parse's text facts, where most traces show none of them).
TS_UNUSUAL = re.compile(rb'"ts"\s*:\s*(?:-|"|\d+\.\d*[1-9])')


_UNREAD = object()  # ts_fields.read not run yet (its None means it declined)
_METADATA_PHASE = re.compile(rb'"ph"\s*:\s*"M"')


def metadata_fields(text: bytes, starts) -> np.ndarray:
    """For each `ts` field beginning at `starts`, whether it belongs to a ph M event: a `"ph": "M"` lies
    with it in one stretch of the text without `{` or `}`, so both are fields of one object."""
    import numpy as np

    starts = np.asarray(starts, dtype=np.int64)
    marks = np.fromiter((m.start() for m in _METADATA_PHASE.finditer(text)), dtype=np.int64)
    if not len(marks) or not len(starts):
        return np.zeros(len(starts), dtype=bool)
    data = np.frombuffer(text, dtype=np.uint8)
    bounds = _stretches_near(data, marks)
    if bounds is None:  # a stretch longer than the reach: every brace of the text
        braces = np.flatnonzero((data == 123) | (data == 125))
        return np.isin(np.searchsorted(braces, starts), np.searchsorted(braces, marks))
    low, high = bounds  # the braces around each mark (its stretch is low < position < high), rising
    k = np.maximum(np.searchsorted(low, starts) - 1, 0)
    return (low[k] < starts) & (starts < high[k])


def metadata_of(text: bytes, fields: ts_fields.TsFields) -> np.ndarray:
    """metadata_fields of the fields read from `text`, kept with them (the span and the shift both ask)."""
    if fields.metadata is None:
        fields.metadata = metadata_fields(text, fields.start)
    return fields.metadata


_REACH = 128  # bytes looked at on either side of a `"ph": "M"` for the braces around it
_MARKS_AT_ONCE = 32768


def _stretches_near(data: np.ndarray, marks: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The positions of the last brace before and the first brace after each mark, looked for within
    _REACH bytes (the ends of the text count as braces); None when one is farther. A metadata event is
    a few short fields, so its stretch is found without a pass over every byte of a large text."""
    import numpy as np

    brace = np.full(_REACH, 123, dtype=np.uint8)
    view = np.lib.stride_tricks.sliding_window_view(np.concatenate((brace, data, brace)), _REACH)
    low, high = np.empty(len(marks), dtype=np.int64), np.empty(len(marks), dtype=np.int64)
    for first in range(0, len(marks), _MARKS_AT_ONCE):
        at = marks[first:first + _MARKS_AT_ONCE]
        before, after = view[at], view[at + _REACH]  # data[at - _REACH:at] and data[at:at + _REACH]
        before = (before == 123) | (before == 125)
        after = (after == 123) | (after == 125)
        if not (before.any(axis=1).all() and after.any(axis=1).all()):
            return None
        low[first:first + len(at)] = at - 1 - before[:, ::-1].argmax(axis=1)
        high[first:first + len(at)] = at + after.argmax(axis=1)
    return low, high


@dataclass
class _Range:
    """The smallest and largest integer part (floor) of some timestamps, and whether one has a fraction."""

    count: int = 0
    low: int | None = None
    high: int | None = None
    fractional: bool = False

    def add(self, count: int, low: int, high: int, fractional: bool) -> None:
        self.count += count
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)
        self.fractional = self.fractional or fractional

    def base(self) -> int | None:
        if not self.count or (self.low >= 0 and (self.high < REBASE_ABOVE_US or not self.fractional)):
            return None
        return self.low


@dataclass(frozen=True)
class Reading:
    """What a second reading of a text is told (prepare._settle_rebase): leave every field below `floor`
    out of the events' range (a field named ts outside the events set the base below their times), and
    keep the base at or below `low` (a timestamp written as a string, which no number field shows)."""

    floor: int | None = None
    low: int | None = None


class TimestampSpan:
    """The integer parts of every `ts` field of a text, seen a piece at a time: of the events' own
    (`events`) and of every field (`every`, metadata included), with the metadata floors kept to count
    those the base would make negative."""

    def __init__(self, reading: Reading | None = None):
        self.count = 0
        self.events, self.every = _Range(), _Range()
        self.metadata_floors: list[np.ndarray] = []  # per piece (310k of them on HTA's MTIA trace)
        self.floor = reading.floor if reading is not None else None
        if reading is not None and reading.low is not None:
            self.events.add(1, reading.low, reading.low, True)

    def see(self, text: bytes, fields=_UNREAD) -> None:
        """Adds the `ts` fields of `text`; `fields` is ts_fields.read(text) when the caller has it."""
        from kineto_sql.loading import ts_fields

        if fields is _UNREAD:
            fields = ts_fields.read(text)
        if fields is not None:  # the same answer from arrays (no exponent: the integer parts are the values)
            if len(fields.value):
                floors = fields.value - (fields.negative & fields.fractional)
                self._add(floors, fields.fractional, metadata_of(text, fields))
            return
        self.see_by_regex(text)

    def see_by_regex(self, text: bytes) -> None:
        """see(), by the regex alone (where the arrays decline, and to test them against)."""
        import numpy as np

        matches = list(_TS_FIELD.finditer(text))
        if not matches:
            return
        groups = [m.groups(b"") for m in matches]  # as findall gives them: b"" for a group that is absent
        floors = [int(g[1]) for g in groups]
        # Whole microseconds are exact in a double up to 2^53; only a fraction at a large magnitude loses ns.
        fractional = [bool(g[2].strip(b".0")) and not g[3] for g in groups]
        if TS_NEGATIVE_FRACTION_OR_EXPONENT.search(text):
            for k, g in enumerate(groups):
                if _exact(g[1], g[2], g[3]):
                    value = _value(g[1], g[2], g[3])
                    floors[k] = int(value.to_integral_value(rounding=ROUND_FLOOR))
                    fractional[k] = fractional[k] or value != floors[k]
        self._add(np.array(floors, dtype=object), np.array(fractional, dtype=bool),
                  metadata_fields(text, [m.start() for m in matches]))

    def _add(self, floors: np.ndarray, fractional: np.ndarray, metadata: np.ndarray) -> None:
        self.count += len(floors)
        if metadata.any():
            self.metadata_floors.append(floors[metadata])
        if self.floor is not None:  # a second reading: what is no event's and lies below the floor decides nothing
            kept = (floors >= self.floor).astype(bool) | metadata
            floors, fractional, metadata = floors[kept], fractional[kept], metadata[kept]
        if len(floors):
            self.every.add(len(floors), int(floors.min()), int(floors.max()), bool(fractional.any()))
        events = ~metadata
        if events.any():
            own = floors[events]
            self.events.add(len(own), int(own.min()), int(own.max()), bool(fractional[events].any()))

    def base(self) -> int | None:
        """The microseconds to subtract, or None when every timestamp is exact as it is."""
        base = self.events.base()
        return base if base is not None else self.every.base()

    def report(self, report) -> None:
        import numpy as np

        base = self.base()
        report.ts_offset_ns = base * 1000
        report.add("timestamps_rebased", self.count,
                   f"timestamps are {'negative' if base < 0 else 'absolute epoch microseconds'}: a double "
                   f"holds them only to ~0.25 us and Perfetto drops negative ones, so {base} us was subtracted "
                   "as text (kineto_metadata.ts_offset_ns adds it back)",
                   examples=[f"offset {base} us"])
        floors = np.concatenate(self.metadata_floors) if self.metadata_floors else np.zeros(0, dtype=np.int64)
        below = floors[floors < base]
        clamped = len(below)
        report.add("metadata_ts_zeroed", clamped,
                   "metadata events (ph M: process and thread names) take no place in time, so their timestamps "
                   "do not set the rebase; those it would make negative (the engine drops an event with a "
                   "negative time, its name with it) are written as 0",
                   examples=[f"ts {v} us" for v in sorted(set(below.tolist()))[:3]])


class RebaseEvidence:
    """Whether a text may need the rebase, seen a piece at a time (a piece is whole `ts` fields): a
    negative timestamp, or one of 13+ digits together with some timestamp with a fraction."""

    def __init__(self):
        self.negative = self.thirteen_digits = self.fraction = False

    def see(self, text: bytes, unusual: bool = True) -> None:
        """`unusual` False: the caller's TS_UNUSUAL search found nothing in `text` (no negative, no fraction)."""
        self.thirteen_digits = self.thirteen_digits or bool(TS_13_DIGITS.search(text))
        if unusual and not self.negative and TS_NEGATIVE_OR_FRACTION.search(text):  # one scan rules both out
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
    value less the base (see _exact). A metadata field (metadata_fields) that would turn negative is
    written as 0. The shifted text is only parsed, never loaded: where it can, the shorter number is
    written in the place of the old one with spaces before it (ts_fields.rewrite), else the field is
    rewritten shorter. A base of 0 (the smallest timestamp is in [0, 1) us) changes nothing.
    `fields` is ts_fields.read(text) when the caller has it."""
    import numpy as np

    from kineto_sql.loading import ts_fields

    if base == 0 and not TS_NEGATIVE.search(text):
        return text  # (a negative field with a base of 0: a metadata one, which is written as 0 below)
    if not 0 < base < 2**62:
        fields = None
    elif fields is _UNREAD:
        fields = ts_fields.read(text)
    if fields is not None:
        shifted = fields.value - base
        below = shifted < 0
        if below.any():
            # a metadata field below the base gets the integer part 0 (its fraction, if any, stays: >= 0)
            zeroed = below & metadata_of(text, fields)
            shifted = np.where(zeroed, 0, shifted)
            below &= ~zeroed
        if not below.any() and not (ts_fields.digits_of(shifted) > fields.end - fields.start).any():
            return ts_fields.rewrite(text, fields, shifted)
    metadata = None

    def zeroed(match: re.Match) -> bool:
        nonlocal metadata
        if metadata is None:
            matches = list(_TS_FIELD.finditer(text))
            flags = metadata_fields(text, [m.start() for m in matches])
            metadata = {m.start() for m, flag in zip(matches, flags) if flag}
        return match.start() in metadata

    def one(match: re.Match) -> bytes:
        head, integer, fraction, exponent = match.group(1), match.group(2), match.group(3) or b"", match.group(4)
        exact = _exact(integer, fraction, exponent)
        if exact:
            # the exponent stays in the text after the match: write the mantissa that, scaled by it, is
            # the value less the base
            scale = -int(exponent[1:]) if exponent else 0
            mantissa = _value(integer, fraction, b"") - Decimal(base).scaleb(scale)
        below = mantissa < 0 if exact else int(integer) < base
        if below and zeroed(match):
            return head + b"0" + fraction  # as the arrays write it: the integer part 0, the rest as written
        if exact:
            return head + format(mantissa, "f").encode()
        if below and fraction.strip(b".0"):
            # below the base (a field named ts outside the events, read again with a floor): -2 + .1 is
            # not -2.1, so the exact value
            return head + format(_value(integer, fraction, b"") - base, "f").encode()
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


def rebase_text(raw: bytes, report, reading: Reading | None = None) -> bytes:
    """The whole text, rebased when it needs it (the change recorded in `report`); `reading`: a second
    reading's limits (the rebase is then certain)."""
    if reading is None and not may_need_rebase(raw):
        return raw
    from kineto_sql.loading import ts_fields

    fields = ts_fields.read(raw)  # read once, for the span and the shift
    span = TimestampSpan(reading)
    span.see(raw, fields)
    base = span.base()
    if base is None:
        return raw
    span.report(report)
    return shift(raw, base, fields)
