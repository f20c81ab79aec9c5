"""loading.ts_fields finds exactly the `ts` fields rebase's regex finds, and rebase.shift parses to the
same values whether the array path or the regex wrote it.

The array path is only a faster way to the regex's answer: on any text it either agrees with the regex,
field for field (where the integer part lies and its value), or declines (None) and the regex runs."""
from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading import rebase, ts_fields

_TOKENS = [b'"ts"', b":", b" ", b"\t", b"\n", b"-", b"0", b"7", b"12", b".", b".5", b".000", b"e", b"E", b",", b"}",
           b"]", b"x", b'"', b"{", b'"ts": ', b"1419116104507123", b"1419116104507123.456", b" " * 40,
           b"12345678901234567890", b'"tid": ']


def _regex_fields(text: bytes) -> list[tuple[int, int, int]]:
    return [(m.start(2), m.end(2), int(m.group(2))) for m in rebase._TS_FIELD.finditer(text)]


def _regex_shift(text: bytes, base: int) -> bytes:
    def one(match: re.Match) -> bytes:
        return match.group(1) + str(int(match.group(2)) - base).encode() + (match.group(3) or b"")

    return rebase._TS_FIELD.sub(one, text)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=40).map(b"".join))
def test_read_finds_what_the_regex_finds(text):
    fields = ts_fields.read(text)
    if fields is not None:
        assert list(zip(fields.start.tolist(), fields.end.tolist(), fields.value.tolist())) == _regex_fields(text)


_FIELD = st.builds(lambda space, sign, digits, fraction, follow: b'"ts"' + space + b":" + space + sign + digits
                   + fraction + follow,
                   st.sampled_from([b"", b" ", b"\t", b"  "]), st.sampled_from([b"", b"-"]),
                   st.from_regex(rb"\A[0-9]{1,18}\Z"), st.sampled_from([b"", b".", b".5", b".000"]),
                   st.sampled_from([b",", b"}", b" ", b"\n", b"x", b"]", b"."]))
_JUNK = st.sampled_from([b'"ts"', b'"name": "ts"', b"{", b"}", b",", b":", b'"x"'])


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from([b'"ts"', b'"', b"t", b"s", b'"ts', b'ts"', b"x", b" "]), max_size=40).map(b"".join))
def test_quoted_ts_are_the_regex_matches(text):
    # the word comparison at four alignments, against the literal regex's left-to-right matches (overlaps too)
    assert ts_fields._quoted_ts(text).tolist() == [m.start() for m in re.finditer(rb'"ts"', text)]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_FIELD, _JUNK), min_size=1, max_size=30).map(b"".join))
def test_read_decides_fields_its_window_holds(text):
    """Where every field fits the window (no long whitespace, at most 18 digits), the array path answers,
    so the property above is not met by declining."""
    fields = ts_fields.read(text)
    assert fields is not None
    assert list(zip(fields.start.tolist(), fields.end.tolist(), fields.value.tolist())) == _regex_fields(text)


def test_read_declines_what_its_window_cannot_decide():
    assert ts_fields.read(b'{"ts": 1.5e3}') is None  # an exponent: the integer part is not the value
    assert ts_fields.read(b'{"ts": 15E-1, "dur": 1}') is None
    assert ts_fields.read(b'{"ts":' + b" " * 40 + b"5}") is None  # more whitespace than the window
    assert ts_fields.read(b'{"ts": 1234567890123456789}') is None  # 19 digits: beyond int64 for the arrays
    found = ts_fields.read(b'{"ts": 12.5, "name": "ts", "args": {"ts": -3}, "x": "ts": 4x}')
    assert list(zip(found.start.tolist(), found.end.tolist(), found.value.tolist())) == [(7, 9, 12), (42, 44, -3)]


def _kineto_text(n: int) -> bytes:
    """Epoch-microsecond timestamps written as Kineto writes them (a double could not hold them)."""
    events = [b'{"ph": "X", "name": "op%d", "pid": 1, "tid": 2, "ts": %d.%03d, "dur": 5, "args": {"ts": %d}}'
              % (i, 1419116104507000 + 37 * i, 125 * (i % 8), 1419116104507000 + i) for i in range(n)]
    return b'{"traceEvents": [' + b", ".join(events) + b'], "displayTimeUnit": "ms"}'


@pytest.mark.parametrize("n", [2, 50, 2000])
def test_shift_parses_to_the_regex_values(n):
    text = _kineto_text(n)
    span = rebase.TimestampSpan()
    span.see(text)
    base = span.base()
    assert base == 1419116104507000
    shifted = rebase.shift(text, base)
    assert len(shifted) == len(text)  # the array path wrote it: each number in its own place
    assert orjson.loads(shifted) == orjson.loads(_regex_shift(text, base))
    assert orjson.loads(shifted)["traceEvents"][-1]["ts"] == 37 * (n - 1) + 0.125 * ((n - 1) % 8)


def test_shift_falls_back_to_the_regex_where_the_arrays_cannot_write():
    text = b'{"traceEvents": [{"ts": -5, "ph": "i"}, {"ts": 1000000000000.5, "ph": "i"}]}'
    assert rebase.shift(text, -5) == _regex_shift(text, -5)  # a negative base lengthens the numbers
    long = b'{"ts": 1234567890123456789.5}'
    assert rebase.shift(long, 1234567890123456000) == _regex_shift(long, 1234567890123456000)
