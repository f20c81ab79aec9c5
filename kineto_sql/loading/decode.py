"""The trace text decoded into typed events (msgspec), and written back.

An event is a `msgspec.Struct` of the fields Perfetto's JSON importer reads (`Event`; `KinetoEvent`, the
fields Kineto writes, when the trace holds no other: smaller, written as the same bytes). `args` stay the text the file
wrote (`msgspec.Raw`: nothing but a correlation is read there, and they are written back verbatim by
`msgspec.json.encode`). Every other field is decoded as the JSON value it is, whatever its type:
validate.py checks and repairs them. Where the rebase needs the exact digits of the timestamps, it reads
them as text in a second decode (`timestamp_texts`).

A trace whose events hold a field not in `Event` (no Kineto trace does) is decoded a second way: those
fields are kept as text beside the event (`Decoded.extras`) and written back with it, so nothing is lost.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from kineto_sql.errors import TraceInputError

UNSET = msgspec.UNSET
Raw = msgspec.Raw


class _Fields(msgspec.Struct, gc=False):
    """The dict-like reading the fixes share (a missing field reads as None, as a dict's get)."""

    def get(self, key: str, default=None):
        value = getattr(self, key, UNSET)
        return default if value is UNSET else value

    def __getitem__(self, key: str):
        value = self.get(key, UNSET)
        if value is UNSET:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value) -> None:
        setattr(self, key, value)

    def __contains__(self, key: str) -> bool:
        return getattr(self, key, UNSET) is not UNSET

    def __delitem__(self, key: str) -> None:
        setattr(self, key, UNSET)

    def update(self, **fields) -> None:
        for key, value in fields.items():
            setattr(self, key, value)


class Event(_Fields, forbid_unknown_fields=True, gc=False):
    """One entry of traceEvents. UNSET: the field is not in the file (None is a JSON null).

    gc=False: an event holds only JSON values (never itself, nor a container that holds it), so it can be
    in no reference cycle; untracked by the cyclic collector, each is 16 bytes smaller and made faster."""

    ph: Any = UNSET
    name: Any = UNSET
    cat: Any = UNSET
    pid: Any = UNSET
    tid: Any = UNSET
    ts: Any = UNSET
    dur: Any = UNSET
    tts: Any = UNSET
    tdur: Any = UNSET
    id: Any = UNSET
    id2: Any = UNSET
    bind_id: Any = UNSET
    flow_in: Any = UNSET
    flow_out: Any = UNSET
    bp: Any = UNSET
    s: Any = UNSET
    scope: Any = UNSET
    cname: Any = UNSET
    args: Raw = UNSET  # the text as written; a dict once a fix rewrote it


class KinetoEvent(_Fields, forbid_unknown_fields=True, gc=False):
    """An Event with only the fields Kineto writes, in Event's order (so it is written as the same bytes):
    a trace whose events hold no other field is decoded into these, 64 bytes smaller each (109k events, 7 MB,
    on hta_trace_diff_control; its 4x replica's child peaked at 368 MB instead of 394, held until written). A fix that sets another field (flows.py's explicit binding)
    makes the event an Event first (`full`)."""

    ph: Any = UNSET
    name: Any = UNSET
    cat: Any = UNSET
    pid: Any = UNSET
    tid: Any = UNSET
    ts: Any = UNSET
    dur: Any = UNSET
    id: Any = UNSET
    bp: Any = UNSET
    s: Any = UNSET
    args: Raw = UNSET


EVENT_TYPES = (KinetoEvent, Event)


def full(e):
    """`e` as an Event (which can hold every field); the same event if it is one."""
    if e.__class__ is KinetoEvent:
        return Event(**{name: getattr(e, name) for name in KinetoEvent.__struct_fields__})
    return e


class Outlier:
    """The `ts` of an event the rebase could not place: it lies farther from the trace's other timestamps
    than int64 nanoseconds can span; validate drops the event and reports it (rebase.py)."""

    def __init__(self, text: str):
        self.text = text


class _Lenient(Event, forbid_unknown_fields=False):
    """Event, for a trace where some event holds another field (kept by decode_trace as text)."""


FIELDS = Event.__struct_fields__


class _Time(msgspec.Struct):
    ts: Raw = UNSET


def timestamp_texts(decoded: "Decoded") -> list:
    """Each entry's `ts` as the text the file wrote (a Raw; UNSET where it has none or is no object)."""
    try:
        return [t.ts for t in msgspec.json.decode(decoded.events_text, type=list[_Time])]
    except msgspec.ValidationError:  # (an entry that is not an object: validate drops it)
        out = []
        for entry in msgspec.json.decode(decoded.events_text, type=list[Raw]):
            try:
                out.append(msgspec.json.decode(entry, type=_Time).ts)
            except msgspec.ValidationError:
                out.append(UNSET)
        return out


def args_of(e: Event):
    """An event's args as decoded JSON (a dict for Kineto's), or None."""
    args = e.args
    if args is UNSET:
        return None
    return msgspec.json.decode(args) if type(args) is Raw else args


@dataclass
class Decoded:
    events: list  # Event, or the decoded value of an entry that is not a JSON object
    metadata: dict  # the top-level fields but traceEvents, decoded
    events_text: Raw | bytes = b"[]"  # the traceEvents list as written
    # whether some event's args may not be a JSON object (validate wraps those); False is certain
    odd_args: bool = True
    # id(event) -> its fields that are not Event's, as text (only for a trace that has some)
    extras: dict = field(default_factory=dict)


_TOP = dict[str, Raw]


def decode_trace(raw: bytes, path: Path) -> Decoded:
    """The document as typed events; one sentence for a text that is not a trace. `raw`: bytes, or any
    buffer with bytes' find methods (the mapped file: source.read_bytes)."""
    try:
        first = _CONTENT.search(raw)  # (raw may be a mmap: no lstrip; regex \s is bytes.strip's whitespace)
        start = b"" if first is None else first.group()
        split = _split_top(raw) if start == b"{" else None
        if split is not None:
            try:
                return _decode_events(raw, *split)
            except msgspec.DecodeError:
                pass  # (the whole decode below finds it again, and says where in the file)
        if start == b"[":
            events_text, metadata = raw, {}
        elif start == b"{":
            top = msgspec.json.decode(raw, type=_TOP)
            events_text = top.pop("traceEvents", None)
            metadata = {key: msgspec.json.decode(value) for key, value in top.items()}
            if events_text is None or bytes(memoryview(events_text)[:1]) != b"[":
                raise TraceInputError(f"{path} is JSON but not a Kineto / Chrome trace (no traceEvents list); "
                                      "pass the file torch.profiler exported")
        else:
            msgspec.json.decode(raw)  # (raises the parse's own error for a text that is not JSON)
            raise TraceInputError(f"{path} is JSON but not a Kineto / Chrome trace (no traceEvents list); "
                                  "pass the file torch.profiler exported")
        return _decode_events(raw, events_text, metadata)
    except msgspec.DecodeError as exc:
        raise TraceInputError(_not_json(raw, path, str(exc))) from None
    except RecursionError:
        raise TraceInputError(f"{path} is not valid JSON as read here: it nests deeper than a JSON reader goes; "
                              "re-export the trace from torch.profiler") from None


def _decode_events(raw: bytes, events_text, metadata: dict) -> Decoded:
    for decoder in _DECODERS:  # (Kineto's fields only, else every field Event has, else one entry at a time)
        try:
            events = decoder.decode(events_text)
            return Decoded(events, metadata, events_text, odd_args=_ODD_ARGS.search(raw) is not None)
        except msgspec.ValidationError:
            continue
    return _decode_each(events_text, metadata)


_DECODERS = (msgspec.json.Decoder(list[KinetoEvent]), msgspec.json.Decoder(list[Event]))


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_CONTENT = re.compile(rb"\S")
_TRIES = 64


def _split_top(raw: bytes):
    """(the traceEvents array's text, the other top-level fields decoded), or None.

    Decoding the top level as a dict of raw values walks the whole event list once more only to find
    where it ends (a quarter of the events' own decode). Here the list is cut out by its text: from its
    key to a closing bracket, tried from the end of the file back. The cut is right when what is left,
    with a placeholder where the list was, decodes as the trace's top level with that placeholder as its
    traceEvents, and the cut decodes as one JSON value (the events' decode, in decode_trace: on any error
    there the whole decode is used). Anything else is left to the whole decode (None), which also says
    what is wrong with a bad file."""
    found = _EVENTS_KEY.search(raw)
    if found is None:
        return None
    begin = found.end() - 1
    placeholder = b'"kineto-sql: the traceEvents list at byte %d"' % begin
    end = len(raw)
    for _ in range(_TRIES):
        end = raw.rfind(b"]", begin, end)
        if end < 0:
            return None
        try:
            top = msgspec.json.decode(raw[:begin] + placeholder + raw[end + 1:], type=_TOP)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        if bytes(top.pop("traceEvents", b"")) != placeholder:
            return None
        return memoryview(raw)[begin:end + 1], {key: msgspec.json.decode(value) for key, value in top.items()}
    return None


def _decode_each(events_text, metadata: dict) -> Decoded:
    """The events one by one: an entry that is not an object is kept as its value (validate drops it), the
    fields an event holds beyond Event's are kept as text in `extras`."""
    events, extras = [], {}
    for entry in msgspec.json.decode(events_text, type=list[Raw]):
        try:
            events.append(msgspec.json.decode(entry, type=Event))
            continue
        except msgspec.ValidationError:
            pass
        try:
            e = msgspec.json.decode(entry, type=_Lenient)
        except msgspec.ValidationError:
            events.append(msgspec.json.decode(entry))
            continue
        e = Event(**{name: getattr(e, name) for name in FIELDS})
        fields = msgspec.json.decode(entry, type=dict[str, Raw])
        extras[id(e)] = {key: value for key, value in fields.items() if key not in FIELDS}
        events.append(e)
    return Decoded(events, metadata, events_text, extras)


# An "args" key whose value does not open an object (nor is null): a maybe (the key may be an arg's own).
# (from `args"`, not `"args"`: the search runs ahead to its first byte, and a quote is in every other key;
# matching more keys than args only sends a trace to validate's per-event look)
_ODD_ARGS = re.compile(rb'args"\s*:\s*[^{\sn]')
_BYTE = re.compile(r"\(byte (\d+)\)")


def _not_json(raw: bytes, path: Path, message: str) -> str:
    """The sentence for a text msgspec could not decode: where, and what is near."""
    raw = raw if type(raw) is bytes else bytes(raw)
    if "truncated" in message:
        return f"{path} is truncated JSON (the file ends mid-event); re-export the trace from torch.profiler"
    found = _BYTE.search(message)
    cause = message.split(" (byte")[0].replace("JSON is malformed: ", "")
    if found is None:
        return f"{path} is not valid JSON: {cause}; re-export the trace from torch.profiler"
    at = int(found.group(1))
    line = raw.count(b"\n", 0, at) + 1
    column = at - (raw.rfind(b"\n", 0, at) + 1) + 1
    near = raw[max(at - 20, 0):at + 20].decode(errors="replace")
    hint = " (NaN and Infinity are not JSON numbers)" if any(w in near for w in ("NaN", "Infinity")) else ""
    return (f"{path} is not valid JSON at line {line} column {column} (byte {at}): {cause} near {near!r}{hint}; "
            "re-export the trace from torch.profiler")


_ENCODER = msgspec.json.Encoder()


def encode_events(events: list, extras: dict, buffer: bytearray) -> None:
    """The events as a JSON array, into `buffer` (replacing what it held): Raw fields verbatim, UNSET ones
    left out."""
    if extras:
        events = [_with_extras(e, extras[id(e)]) if id(e) in extras else e for e in events]
    _ENCODER.encode_into(events, buffer)


def _with_extras(e: Event, extra: dict) -> dict:
    out = {name: getattr(e, name) for name in FIELDS if getattr(e, name) is not UNSET}
    out.update(extra)
    return out
