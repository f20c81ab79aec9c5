"""Every `ts` field of a trace text read at once with numpy: where its integer part lies and its value,
so that rebase.shift can subtract the base from all of them in a few array passes. Most Kineto traces
have absolute epoch timestamps and are shifted piece by piece as they are parsed; a regex substitution
with a Python callback per field costs about 5 us a field (0.6 s on a 56 MB trace, a third of its parse),
this about half of that, and parse_file on that trace takes 0.3 s less.

The fields found are exactly those of rebase._TS_FIELD, `("ts"\\s*:\\s*)(-?\\d+)(\\.\\d*)?(?=[,}\\s eE])` (its
exponent group is a lookahead that always succeeds, so it finds no other fields):
each `"ts"` of the text is followed through the same steps in a window of bytes after it. Where that
window cannot decide a field (more whitespace or digits than it holds), an integer part has more than
18 digits or a field has an exponent (its integer part is not its value), `read` answers None and the
caller uses the regex: the result never depends on which ran.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

WINDOW = 32  # `: ` + 16 digits + `.` + 6 decimals + the next byte fit; longer fields go to the regex
_SPACE = np.frombuffer(b" \t\n\r\x0b\x0c", dtype=np.uint8)  # what \s matches in a bytes pattern
_FOLLOW = np.frombuffer(b",} \t\n\r\x0b\x0ceE", dtype=np.uint8)  # the lookahead [,}\s eE]
_EXPONENT = np.frombuffer(b"eE", dtype=np.uint8)
_POW10 = 10 ** np.arange(19, dtype=np.int64)
_MAX_DIGITS = 18  # 10^18 - 1 fits int64


@dataclass
class TsFields:
    start: np.ndarray  # where the integer part begins (its `-` included)
    end: np.ndarray  # just after its last digit
    value: np.ndarray  # the integer part, int64
    negative: np.ndarray  # written with a `-` (-0.5 too, whose integer part is 0)
    fractional: np.ndarray  # a fraction with a digit other than 0 follows
    # whether each is a ph M event's field (rebase.metadata_fields), once the rebase has asked
    metadata: np.ndarray | None = None


def _first(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the index of the first True and whether there is one."""
    return mask.argmax(axis=1), mask.any(axis=1)


_QUOTED_TS = re.compile(rb'"ts"')


_QUOTED_TS_WORD = np.frombuffer(b'"ts"', dtype=np.uint32)[0]


def _quoted_ts(text: bytes) -> np.ndarray:
    """The positions of every `"ts"` in the text, as the regex finds them (left to right, none overlapping).

    The text is read as 4-byte words at each of its four alignments and every word compared with `"ts"`
    (a quarter of the time of the regex's matches collected one by one). Two finds closer than 4 bytes
    (`"ts"ts"`: not in valid JSON) overlap; there the regex decides which it takes."""
    data = np.frombuffer(text, dtype=np.uint8)
    found = []
    for offset in range(4):
        words = (len(data) - offset) // 4
        if words > 0:
            same = data[offset:offset + 4 * words].view(np.uint32) == _QUOTED_TS_WORD
            found.append(np.flatnonzero(same) * 4 + offset)
    at = np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
    if len(at) > 1 and (np.diff(at) < 4).any():
        return np.fromiter((m.start() for m in _QUOTED_TS.finditer(text)), dtype=np.int64)
    return at


def read(text: bytes) -> TsFields | None:
    at = _quoted_ts(text)
    empty = np.zeros(0, dtype=np.int64)
    if not len(at):
        none = np.zeros(0, dtype=bool)
        return TsFields(empty, empty, empty, none, none)
    data = np.frombuffer(text, dtype=np.uint8)
    columns = np.arange(WINDOW)
    # the bytes after each `"ts"`; past the end of the text, 0 (no class matches it, as at the end)
    padded = np.concatenate((data, np.zeros(WINDOW + 4, dtype=np.uint8)))
    window = np.lib.stride_tricks.sliding_window_view(padded, WINDOW)[at + 4]
    space = np.isin(window, _SPACE)
    digit = (window - 48) < 10  # uint8 arithmetic: only '0'..'9' land below 10
    rows = np.arange(len(at))

    colon_at, found = _first(~space)
    if not found.all():
        return None
    colon = window[rows, colon_at] == 58
    value_at, found = _first(~space & (columns > colon_at[:, None]))
    if not found[colon].all():
        return None
    negative = window[rows, value_at] == 45
    digits_at = value_at + negative
    digits_end, found = _first(~digit & (columns >= digits_at[:, None]))
    if not found[colon].all():
        return None
    count = digits_end - digits_at
    after = window[rows, np.minimum(digits_end, WINDOW - 1)]
    dot = after == 46
    fraction_end, found = _first(~digit & (columns > digits_end[:, None]))
    if not found[colon & dot].all():
        return None
    after_fraction = window[rows, np.minimum(fraction_end, WINDOW - 1)]
    match = colon & (count > 0) & (np.isin(after, _FOLLOW) | (dot & np.isin(after_fraction, _FOLLOW)))
    if (count[match] > _MAX_DIGITS).any():
        return None
    exponent = np.isin(after, _EXPONENT) | (dot & np.isin(after_fraction, _EXPONENT))
    if (exponent & match).any():
        return None  # its integer part is not its value: the regex path rewrites it exactly

    fractional = (dot[:, None] & (columns > digits_end[:, None]) & (columns < fraction_end[:, None])
                  & (window != 48)).any(axis=1)[match]
    window, digits_at, digits_end = window[match], digits_at[match], digits_end[match]
    negative = negative[match]
    value = np.zeros(len(window), dtype=np.int64)
    # most fields have the same layout (`: ` then 16 digits): one product of a digit block by the powers
    # of ten per layout
    layouts = digits_at * (WINDOW + 1) + (digits_end - digits_at)
    ordered = np.sort(layouts)  # (np.unique would import numpy.ma: 13 ms on the way to the engine)
    for layout in ordered[np.flatnonzero(np.diff(ordered, prepend=-1))].tolist():
        begin, size = divmod(layout, WINDOW + 1)
        same = np.flatnonzero(layouts == layout)
        block = window[same, begin:begin + size].astype(np.int64) - 48
        value[same] = block @ _POW10[size - 1::-1]
    value = np.where(negative, -value, value)
    base = at[match] + 4
    return TsFields(base + digits_at - negative, base + digits_end, value, negative, fractional)


def rewrite(text: bytes, fields: TsFields, values: np.ndarray) -> bytes:
    """`text` with each field's integer part replaced by the non-negative `values`, written right-aligned
    in the same bytes with spaces before it (JSON allows whitespace before a value), so nothing moves.
    The caller makes sure every value has no more digits than the text it replaces."""
    width = fields.end - fields.start
    total = int(width.sum())
    out = bytearray(text)
    if not total:
        return bytes(out)
    first = np.repeat(np.cumsum(width) - width, width)
    position = np.repeat(fields.start, width) + (np.arange(total) - first)
    place = np.repeat(fields.end, width) - 1 - position
    each = np.repeat(values, width)
    digit = 48 + (each // _POW10[np.clip(place, 0, 18)]) % 10
    written = np.where(place < np.repeat(digits_of(values), width), digit, 32)
    np.frombuffer(out, dtype=np.uint8)[position] = written.astype(np.uint8)
    return bytes(out)


def digits_of(values: np.ndarray) -> np.ndarray:
    """The number of decimal digits of each non-negative value."""
    return (values[:, None] >= _POW10[1:]).sum(axis=1) + 1
