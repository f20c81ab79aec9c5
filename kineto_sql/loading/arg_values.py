"""Arg values Perfetto v52 cannot hold as written, and strings it would keep escaped.

Args stay the text the file wrote (decode.Event) unless one of these needs a change, which the text shows
first (a search of the args texts, or of the whole text for escapes, rules each out for most traces):

- an integer outside int64 (a run of 19+ digits) would wrap to a wrong negative number: it is stored as
  its exact decimal text;
- an arg whose value is JSON null gets no row (SQL has no typed null arg): counted in the report;
- a string escape: the importer unescapes a string only when it holds an escaped quote, so `"caf\\u00e9"`
  would be stored as the nine characters caf\\u00e9. Args (and any extra field) with a backslash are decoded
  and written again by msgspec, which writes every character raw but those JSON must escape; the strings
  the engine will still keep escaped (a backslash or a control character, and no quote) are reported.
"""
from __future__ import annotations

import re
from collections import Counter
from operator import attrgetter

import msgspec

from kineto_sql.loading.decode import UNSET, Event, Raw
from kineto_sql.loading.report import IngestReport

# A backslash escape other than \" (a string that holds one is unescaped whole by the engine).
_ESCAPE = re.compile(rb'\\[^"]')
_DIGITS_AS_ZEROS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_RUN = b"0" * 19
_LOW, _HIGH = -2**63, 2**63


def escape_token(text: bytes) -> bool:
    r"""Whether the text may hold a string escape that Perfetto v52 would keep as written (a maybe: `\\"`
    also ends a string)."""
    # (a backslash is found at memchr speed; most traces have none, and the regex costs 6x as much. find, not
    # `in`: the text may be a mmap, whose `in` compares byte by byte, 300x slower)
    return text.find(b"\\") >= 0 and _ESCAPE.search(text) is not None


def fix_args(events: list[Event], extras: dict, text: bytes, report: IngestReport) -> bool:
    """The args passes the text shows a need for; whether any changed an event."""
    fixing = ArgsPass(extras, text, report)
    fixing.piece(events)
    return fixing.finish()


class ArgsPass:
    """fix_args a piece of the events at a time, in file order (`piece`), then its report (`finish`): the
    loader's child runs it on each piece just before writing it, off the path to the engine's first byte.

    What a piece needs is decided from that piece's own args texts: an event's args change only where its
    own text shows the need (the args a fix wrote as an object hold strings only), so the pieces together
    change what one pass over all the events would, and report it in the same order."""

    def __init__(self, extras: dict, text: bytes, report: IngestReport):
        self.extras, self.report = extras, report
        self.escape = escape_token(text)
        self.nulls: Counter = Counter()
        self.huge: list = []
        self.kept_escapes: list[str] = []

    def piece(self, events: list[Event]) -> None:
        huge_maybe, null_maybe = _args_may_hold(events)
        escape, nulls, huge = self.escape, self.nulls, self.huge
        if not (huge_maybe or null_maybe or escape):
            return
        for e in events:
            args = e.args
            if type(args) is Raw:
                raw = bytes(args)
                if not ((huge_maybe and integer_beyond_int64(raw)) or (null_maybe and null_token(raw))
                        or (escape and b"\\" in raw)):
                    continue
                args = _decoded(raw)
                if escape and b"\\" in raw:
                    e.args = args
            if not isinstance(args, dict):
                continue
            fixed = {}
            for key, value in args.items():
                if value is None:
                    nulls[key] += 1
                elif type(value) is int:
                    if not _LOW <= value < _HIGH:
                        huge.append(value)
                        fixed[key] = str(value)
                elif huge_maybe and (type(value) is dict or type(value) is list):
                    new = _fix(value, huge)
                    if new is not value:
                        fixed[key] = new
            if fixed:
                e.args = {**args, **fixed}
        if escape:
            extras = self.extras
            for e in events:
                extra = extras.get(id(e))
                if extra:
                    extras[id(e)] = {k: msgspec.json.decode(v) if type(v) is Raw else v for k, v in extra.items()}
            _kept_escapes(events, extras, self.kept_escapes)

    def finish(self) -> bool:
        """Reports what the pieces changed; whether any event changed (any escape: its args were written anew)."""
        report, kept = self.report, self.kept_escapes
        if self.escape:
            report.add("escape_kept_by_engine", len(kept),
                       "a string with a backslash or a control character (a newline, a tab) and no quote: Perfetto "
                       "v52's JSON importer unescapes only strings that hold an escaped quote, so it stores these "
                       "escapes as written (a newline as a backslash and an n); every other escaped character was "
                       "written as itself",
                       examples=[repr(text[:60]) for text in kept[:5]])
        report.add("integer_beyond_int64_as_string", len(self.huge),
                   "an arg integer outside int64 would wrap to a wrong negative number in Perfetto; it is stored "
                   "as its exact decimal text", examples=self.huge)
        report.add("null_arg_not_stored", sum(self.nulls.values()),
                   "Perfetto stores no row for an arg whose JSON value is null (SQL has no typed null arg); "
                   "the event itself is kept",
                   examples=[f"{k} x{n}" for k, n in self.nulls.most_common(5)])
        return self.escape or bool(self.huge)


# Args texts searched at once by _args_may_hold: ~1 MB joined on a GPU trace.
_BATCH = 4096


def _args_may_hold(events: list[Event]) -> tuple[bool, bool]:
    """(integer_beyond_int64, null_token) of the args still kept as text, the only ones those passes read
    (validate's wrapped args hold a string): a search of those texts, joined a batch at a time, rather than
    of the whole trace, of which they are under half. A space between two texts joins no digit run and puts
    no `:`, `,` or `[` before a `null`, so each text reads as it does alone."""
    texts = [args for args in map(_ARGS, events) if type(args) is Raw]
    huge = null = False
    for start in range(0, len(texts), _BATCH):
        joined = b" ".join(texts[start:start + _BATCH])
        huge = huge or integer_beyond_int64(joined)
        null = null or null_token(joined)
        if huge and null:
            break
    return huge, null


_ARGS = attrgetter("args")


def _decoded(raw: bytes):
    """One event's args text as Python values (only where the text shows this pass a need)."""
    return msgspec.json.decode(raw)


def null_token(text: bytes) -> bool:
    """Whether the text may hold a JSON null value (a `null` after `:`, `,` or `[`, spaces between)."""
    for found in _NULL.finditer(text):  # (a third faster than a loop of find)
        before = found.start() - 1
        while before >= 0 and text[before] in b" \t\r\n":
            before -= 1
        if before >= 0 and text[before] in b":,[":
            return True
    return False


_NULL = re.compile(rb"null")


def integer_beyond_int64(text: bytes) -> bool:
    """Whether the text may hold an integer outside int64: a run of 19+ digits that is not the fraction or
    the mantissa of a float, whose value (with a `-` before it) is outside int64. Read a megabyte at a time
    (each part with the 40 bytes after it), so no copy of the whole text is made."""
    for start in range(0, len(text), _PART):
        if _integer_outside(text, start, min(start + _PART + 40, len(text))):
            return True
    return False


_PART = 1 << 20


def _integer_outside(text: bytes, begin: int, stop: int) -> bool:
    # digits as "0" and all else as " ", then one fast search for a run (20x a regex's \d{19})
    zeros = text[begin:stop].translate(_DIGITS_AS_ZEROS)
    at = zeros.find(_RUN)
    while at >= 0:
        start, end = at, at + 19
        while start and zeros[start - 1] == 48:
            start -= 1
        while end < len(zeros) and zeros[end] == 48:
            end += 1
        if start == 0 and begin and text[begin - 1] in b"0123456789":
            pass  # (the tail of a run that begins in the part before: read there)
        elif not (begin + start and text[begin + start - 1] == 46) and not (
                begin + end < len(text) and text[begin + end] in b".eE"):
            value = int(text[begin + start:begin + end])
            if not _LOW <= (-value if begin + start and text[begin + start - 1] == 45 else value) < _HIGH:
                return True
        at = zeros.find(_RUN, end)
    return False


def _fix(value, huge: list):
    """`value` with its integers outside int64 as text (the same object when none is)."""
    if type(value) is dict:
        items = value.items()
    elif type(value) is list:
        items = enumerate(value)
    else:
        if type(value) is int and not _LOW <= value < _HIGH:
            huge.append(value)
            return str(value)
        return value
    out = None
    for key, item in items:
        new = _fix(item, huge)
        if new is not item:
            if out is None:
                out = dict(value) if type(value) is dict else list(value)
            out[key] = new
    return value if out is None else out


def _kept_escapes(events: list[Event], extras: dict, kept: list[str]) -> None:
    """Adds to `kept` the strings the engine will still keep escaped: one with a backslash or a control
    character (which JSON must write escaped) and no quote (the engine unescapes a string that holds an
    escaped quote, and then every escape in it)."""

    def look(value) -> None:
        if type(value) is str:
            if '"' not in value and ("\\" in value or any(c < " " for c in value)):
                kept.append(value)
        elif type(value) is dict:
            for key, item in value.items():
                look(key)
                look(item)
        elif type(value) is list:
            for item in value:
                look(item)

    for e in events:  # (args still kept as text hold no backslash)
        for name in e.__struct_fields__:
            value = getattr(e, name)
            if value is not UNSET and type(value) is not Raw:
                look(value)
        look(extras.get(id(e)))
