"""Checks on the trace text, before or beside the parse, that rule a whole pass over the events out.

prepare._scan_args walks every arg of every event for three things Perfetto cannot hold: an integer
outside int64, a JSON null, and a value nested deeper than a JSON writer goes. Each can only be there if
the text shows it, and the text can be searched far faster than the parsed events can be walked:

- an integer outside int64 has 19 or more digits: `integer_beyond_int64` finds every run of 19+ ASCII
  digits (a word test over the bytes: compiled in _crawcheck.c, else numpy) and reads the ones that are
  integer tokens;
- a null arg is the token `null` after `:`, `,` or `[`: `null_token` looks at every `null` in the text;
- the nesting depth is bounded by the parse itself (source.parse_trace_probed).

Each answers "certainly not there" or "maybe" (a digit run inside a string, `: null` inside a name); on
"maybe" the pass runs as before, so the shortcut can only skip work that would have changed nothing.
"""
from __future__ import annotations

import re

try:  # _long_digit_runs compiled (pyproject's ext-modules), so the text-facts helper imports no numpy
    from kineto_sql.loading import _crawcheck
except ImportError:
    _crawcheck = None

INT64_MIN, INT64_MAX, UINT64_MAX = -2**63, 2**63 - 1, 2**64 - 1
_JSON_SPACE = b" \t\r\n"


# A backslash escape other than \" (a string that holds one is unescaped whole by the engine: escape_token).
_ESCAPE = re.compile(rb'\\[^"]')


def escape_token(raw: bytes) -> bool:
    r"""Whether the text may hold a string escape that Perfetto v52 would keep as written: its JSON tokenizer
    unescapes a string only when the string holds an escaped quote, so `"caf\u00e9"` is stored as the nine
    characters caf\u00e9 and `"a\nb"` with a backslash and an n (measured on name, cat, args keys and
    values, process, thread and counter names). A maybe, like the others: `\\"` also ends a string."""
    return _ESCAPE.search(raw) is not None


def null_token(raw: bytes) -> bool:
    """Whether the text may hold a JSON null value (a `null` after `:`, `,` or `[`, spaces between)."""
    at = raw.find(b"null")
    while at >= 0:
        before = at - 1
        while before >= 0 and raw[before] in _JSON_SPACE:
            before -= 1
        if before >= 0 and raw[before] in b":,[":
            return True
        at = raw.find(b"null", at + 4)
    return False


def integer_beyond_int64(raw: bytes) -> bool:
    """Whether the text may hold an integer outside int64: a run of 19+ digits that is not the fraction
    or the mantissa of a float, whose value (with a `-` before it) is outside int64."""
    return _integer_outside(raw, INT64_MIN, INT64_MAX)


def integer_orjson_rounds(raw: bytes) -> bool:
    """Whether the text may hold an integer that orjson reads as a float: orjson 3 keeps integers from
    -2^63 to 2^64 - 1 exact and turns any other silently into the nearest double (1e30 for
    1000000000000000000000000000001), so such a text is parsed by the stdlib instead."""
    return _integer_outside(raw, INT64_MIN, UINT64_MAX)


def _integer_outside(raw: bytes, low: int, high: int) -> bool:
    for start, end in _long_digit_runs(raw):
        if start > 0 and raw[start - 1] == ord("."):
            continue  # the fraction of a float
        if end < len(raw) and raw[end] in b".eE":
            continue  # the mantissa of a float
        value = int(raw[start:end])
        if start > 0 and raw[start - 1] == ord("-"):
            value = -value
        if not low <= value <= high:
            return True
    return False


_HIGH, _THREES, _SIXES = 0xF0F0F0F0F0F0F0F0, 0x3030303030303030, 0x0606060606060606
_WORDS_AT_ONCE = 1 << 17  # 1 MB of text per numpy step: the temporaries stay in the cache


def _long_digit_runs(raw: bytes) -> list[tuple[int, int]]:
    """(start, end) of every maximal run of 19 or more ASCII digits."""
    if _crawcheck is not None:
        return _crawcheck.long_digit_runs(raw)
    return _long_digit_runs_numpy(raw)


def _long_digit_runs_numpy(raw: bytes) -> list[tuple[int, int]]:
    import numpy as np  # (here only: the compiled form spares the text-facts helper its import)

    data = np.frombuffer(raw, dtype=np.uint8)
    words = data[:len(data) // 8 * 8].view(np.uint64)
    high, threes, sixes = np.uint64(_HIGH), np.uint64(_THREES), np.uint64(_SIXES)
    # A run of 19+ digits covers at least one whole aligned 8-byte word. A word is 8 digits when every
    # byte is 0x30..0x39: its high nibble is 3, and stays 3 when 6 is added to the byte (no carry leaves
    # a byte whose high nibble is 3, so the bytes can be added as one uint64).
    found = []
    for first in range(0, len(words), _WORDS_AT_ONCE):
        part = words[first:first + _WORDS_AT_ONCE]
        digits = np.bitwise_and(part, high) == threes
        plus = np.add(part, sixes)
        np.bitwise_and(plus, high, out=plus)
        digits &= plus == threes
        hits = np.flatnonzero(digits)
        if len(hits):
            found.append(hits + first)
    if not found:
        return []
    full = np.concatenate(found)
    # Consecutive all-digit words form one stretch; the run through a stretch goes on into the words on
    # either side, which are not all digits: it takes at most 7 more bytes from each.
    breaks = np.flatnonzero(np.diff(full) != 1)
    starts = full[np.concatenate(([0], breaks + 1))] * 8
    ends = (full[np.concatenate((breaks, [len(full) - 1]))] + 1) * 8
    side = np.arange(1, 8)
    left = _digits_in_a_row(data, starts[:, None] - side)  # bytes start-1, start-2, ...
    right = _digits_in_a_row(data, ends[:, None] - 1 + side)  # bytes end, end+1, ...
    long = np.flatnonzero(ends - starts + left + right >= 19)
    return list(zip((starts[long] - left[long]).tolist(), (ends[long] + right[long]).tolist()))


def _digits_in_a_row(data, at):
    """For each row of byte positions, how many of them from the first on are digits (outside the text: not)."""
    import numpy as np

    inside = (at >= 0) & (at < len(data))
    digits = ((data[np.clip(at, 0, len(data) - 1)] - 48) < 10) & inside
    return np.cumprod(digits, axis=1).sum(axis=1)
