"""Rebasing timestamps on their exact digits, so every event keeps its nanoseconds.

A double holds an absolute epoch-microsecond timestamp with 3 decimals only to ~0.25 us, and Perfetto
drops negative ones; such a trace's timestamps get a whole number of microseconds (the floor of the
smallest) subtracted from the text the file wrote (each event's `ts` is kept as that text: decode.Event),
and the offset goes in the report (kineto_metadata.ts_offset_ns adds it back). A timestamp written as a
numeric string gets the same subtraction, exactly, and stays a string.

The base comes from the timestamps of the events the engine places in time. A metadata event's (ph M:
process and thread names) places nothing, and writers put anything there (HTA's MTIA trace writes 0.0
beside events at 3.6e12 us), so it is left out, and one the base would make negative is written as 0
(the engine's sorter drops an event with a negative time, its name with it). Only when the other events
need no rebase do the metadata timestamps decide it (a negative one still shifts the whole trace up).
Only the events' own `ts` fields are touched: a field named ts in args or at the top level keeps its text.

The base must leave every event's time inside int64 nanoseconds: a timestamp beyond that range, or one so far
from the others (more than half that range from their median) that no base could keep both, is an outlier:
it sets no base, and validate drops its event and reports it by index (one wild event, not every other).
"""
from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal, InvalidOperation


from kineto_sql.loading.decode import EVENT_TYPES, UNSET, Decoded, Outlier, timestamp_texts
from kineto_sql.loading.report import IngestReport
from kineto_sql.loading.validate import MAX_US

# Above this a double cannot hold every nanosecond of a microsecond timestamp with 3 decimals.
REBASE_ABOVE_US = 10**12
_NUMBER_START = frozenset(b"-0123456789")
_PLAIN_START = frozenset(b"0123456789")  # (a negative number with a fraction lies below its integer part)


def _parts(text: bytes) -> tuple[int, bool, Decimal | None]:
    """A number's floor, whether it has a fraction, and its exact value where the digits alone do not
    give it (a negative fraction, an exponent); raises ValueError for a text that is not a number."""
    if b"e" in text or b"E" in text:
        value = Decimal(text.decode())
        floor = int(value.to_integral_value(rounding=ROUND_FLOOR))
        return floor, value != floor, value
    head, dot, fraction = text.partition(b".")
    integer = int(head)
    fractional = bool(dot) and bool(fraction.strip(b"0"))
    if head[:1] == b"-" and fractional:
        value = Decimal(text.decode())
        return integer - 1, True, value
    return integer, fractional, None


def _string_value(text: str) -> Decimal | None:
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, AttributeError, ValueError):
        return None
    return value if value.is_finite() else None


def rebase(decoded: Decoded, report: IngestReport) -> None:
    """Subtracts the base from every event's timestamp where the trace needs it (see the module doc)."""
    if not _may_need_rebase(decoded.events):
        return
    numbers, strings = [], []  # (event, text, floor, fraction digits / exact value / None); (event, exact value)
    own, every = [], []  # the floors of the events' own timestamps, and of every one
    own_fraction = every_fraction = False
    for e, raw in zip(decoded.events, timestamp_texts(decoded)):
        if type(e) not in EVENT_TYPES or raw is UNSET:
            continue
        text = bytes(raw)
        if text[0] in _PLAIN_START and b"e" not in text and b"E" not in text:  # (the common case)
            head, dot, fraction = text.partition(b".")
            floor = int(head)
            # (once an event's own fraction is seen, the others need not be looked at: it implies every's)
            fractional = not own_fraction and bool(dot) and bool(fraction.strip(b"0"))
            numbers.append((e, text, floor, fraction if dot else None))
        elif text[0] in _NUMBER_START:
            try:
                floor, fractional, exact = _parts(text)
            except (ValueError, InvalidOperation):
                continue
            numbers.append((e, text, floor, exact))
        elif text[0] == 34:  # a string
            exact = _string_value(e.ts)
            if exact is None:
                continue
            floor = int(exact.to_integral_value(rounding=ROUND_FLOOR))
            fractional = exact != floor
            strings.append((e, exact))
        else:
            continue
        if e.ph != "M":
            own.append((floor, e))
            own_fraction = own_fraction or fractional
        every.append(floor)
        every_fraction = every_fraction or fractional
    own, every, numbers, strings = _without_outliers(own, every, numbers, strings)
    base = _base([floor for floor, _ in own], own_fraction)
    if base is None:
        base = _base(every, every_fraction)
    if base is None:
        return
    zeroed = _shift_numbers(numbers, base)
    _shift_strings(strings, base)
    report.ts_offset_ns = base * 1000
    report.add("timestamps_rebased", len(numbers),
               f"timestamps are {'negative' if base < 0 else 'absolute epoch microseconds'}: a double "
               f"holds them only to ~0.25 us and Perfetto drops negative ones, so {base} us was subtracted "
               "from their digits (kineto_metadata.ts_offset_ns adds it back)",
               examples=[f"offset {base} us"])
    report.add("metadata_ts_zeroed", len(zeroed),
               "metadata events (ph M: process and thread names) take no place in time, so their timestamps "
               "do not set the rebase; those it would make negative (the engine drops an event with a "
               "negative time, its name with it) are written as 0",
               examples=[f"ts {v} us" for v in sorted(set(zeroed))[:3]])
    report.add("string_ts_rebased", len(strings),
               f"a timestamp written as a string gets the same {base} us subtracted from it exactly, so it "
               "stays on the clock of the others", examples=[f"offset {base} us"])


def _without_outliers(own: list, every: list, numbers: list, strings: list) -> tuple:
    """The floors and events less the outliers (see the module doc), each outlier's ts made an Outlier. A
    timestamp beyond int64 ns sets no base either (validate drops it as out of range)."""
    fits = [(floor, e) for floor, e in own if -MAX_US <= floor <= MAX_US]
    every = [floor for floor in every if -MAX_US <= floor <= MAX_US]
    if not fits:
        return fits, every, numbers, strings
    floors = sorted(floor for floor, _ in fits)
    if floors[-1] - floors[0] <= MAX_US:
        return fits, every, numbers, strings  # (the common case: one base keeps every event in range)
    median = floors[len(floors) // 2]
    out = {id(e) for floor, e in fits if abs(floor - median) > MAX_US // 2}
    for floor, e in fits:
        if id(e) in out:
            e.ts = Outlier(str(e.ts))
    own = [(floor, e) for floor, e in fits if id(e) not in out]
    every = [floor for floor in every if abs(floor - median) <= MAX_US // 2]
    return own, every, [n for n in numbers if id(n[0]) not in out], [s for s in strings if id(s[0]) not in out]


def _may_need_rebase(events: list) -> bool:
    """False when the decoded values already rule the rebase out (no negative timestamp, no string one, and
    no fraction beside a timestamp at or above REBASE_ABOVE_US), so the digits need not be read."""
    high, fraction = 0, False
    for e in events:
        if type(e) not in EVENT_TYPES:
            continue
        ts = e.ts
        kind = ts.__class__
        if kind is int:
            if ts < 0 or ts > MAX_US:
                return True
            if ts > high:
                high = ts
        elif kind is float:
            if ts < 0 or ts != ts or ts > MAX_US:
                return True
            fraction = True
            if ts > high:
                high = ts
        elif kind is str:
            return True
    return fraction and high >= REBASE_ABOVE_US


def _base(floors: list, fractional: bool) -> int | None:
    """The microseconds to subtract from timestamps of these floors, or None when each is exact as it is."""
    if not floors:
        return None
    low = min(floors)
    if low >= 0 and (not fractional or max(floors) < REBASE_ABOVE_US):
        return None
    return low


def _shift_numbers(numbers: list, base: int) -> list[int]:
    """Each number less `base`, written exactly; a metadata one below it as 0 (its fraction kept). The
    floors of those zeroed."""
    zeroed = []
    for e, text, floor, exact in numbers:
        if floor < base and e.ph == "M":
            zeroed.append(floor)
            _, dot, fraction = text.partition(b".")
            text = b"0" + (b"." + fraction.split(b"e")[0].split(b"E")[0] if dot else b"")
        elif exact is None:
            e.ts = floor - base
            continue
        elif type(exact) is bytes:
            text = b"%d.%s" % (floor - base, exact)
        else:
            text = format(exact - base, "f").encode()
        # (the double nearest the exact value: what the engine reads from it, and from its shortest repr)
        e.ts = float(text) if b"." in text else int(text)
    return zeroed


def _shift_strings(strings: list, base: int) -> None:
    for e, exact in strings:
        value = exact - base
        if value < 0 and e.ph == "M":
            value = Decimal(0)
        e.ts = format(value, "f")
