"""rebase keeps every timestamp's exact value: after the rebase, each `ts` field plus the offset in the
report is the field as written, to the last digit, and none is negative (Perfetto drops those).

Subtracting the base from the integer part alone is right for a non-negative field; a negative field
with a fraction lies below its integer part (-4999.5 + 5000 is 0.5, not 1.5) and a field with an
exponent is not its digits, so the base is the floor of the smallest value and those fields are
rewritten from their exact decimal value."""
from __future__ import annotations

import re
from decimal import Decimal

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kineto_sql.loading.rebase import TimestampSpan, rebase_text
from kineto_sql.loading.report import IngestReport

_TS = re.compile(rb'"ts"\s*:\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)')

_VALUE = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.builds(lambda i, f: f"{i}.{f}", st.integers(-10**6, 10**6), st.from_regex(r"\A[0-9]{1,6}\Z")),
    st.builds(lambda i, f: f"-0.{f}", st.just(0), st.from_regex(r"\A[0-9]{1,6}\Z")),
    st.builds(lambda i, f: f"{i}.{f}", st.integers(10**15, 10**16), st.from_regex(r"\A[0-9]{1,3}\Z")),
    st.builds(lambda m, e: f"{m}e{e}", st.decimals(-10**4, 10**4, places=3).map(str), st.integers(-3, 12)),
)


def _text(values: list[str]) -> bytes:
    events = ",".join(f'{{"ph":"X","name":"e{i}","ts":{v},"dur":1}}' for i, v in enumerate(values))
    return f'{{"traceEvents":[{events}]}}'.encode()


def _values(text: bytes) -> list[Decimal]:
    return [Decimal(m.decode()) for m in _TS.findall(text)]


@settings(max_examples=400, deadline=None)
@given(st.lists(_VALUE, min_size=1, max_size=12))
def test_every_timestamp_keeps_its_exact_value(values):
    text = _text(values)
    report = IngestReport("t.json", len(text))
    out = rebase_text(text, report)
    orjson.loads(out)  # still JSON
    offset_us = Decimal(report.ts_offset_ns) / 1000
    before, after = _values(text), _values(out)
    assert [a + offset_us for a in after] == before
    if report.ts_offset_ns:
        assert min(after) >= 0


def test_negative_fractions_and_exponents_by_hand():
    text = _text(["-4999.5", "-5000.25", "-0.5", "1.5e3"])
    report = IngestReport("t.json", len(text))
    out = rebase_text(text, report)
    assert report.ts_offset_ns == -5001_000  # the floor of -5000.25
    assert _values(out) == [Decimal("1.5"), Decimal("0.75"), Decimal("5000.5"), Decimal("6501")]
    assert [e["ts"] for e in orjson.loads(out)["traceEvents"]] == [1.5, 0.75, 5000.5, 6501]


_TOKENS = [b'"ts"', b":", b" ", b"-", b"0", b"7", b"12", b".", b".5", b".000", b".0300", b"e3", b",", b"}", b"x",
           b'"ts": ', b"1419116104507123", b"1419116104507123.456", b"-0.25", b" " * 40, b"12345678901234567890"]


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(_TOKENS), max_size=40).map(b"".join),
                 st.lists(_VALUE, min_size=1, max_size=12).map(_text)))
def test_the_span_from_arrays_is_the_span_from_the_regex(text):
    arrays, regex = TimestampSpan(), TimestampSpan()
    arrays.see(text)
    regex.see_by_regex(text)
    assert vars(arrays) == vars(regex)
