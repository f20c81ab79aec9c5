"""Events' args kept as the text the file wrote, from the streamed parse to the engine.

The loader reads one thing inside an event's args before the engine gets its first byte: a kernel's or
runtime call's correlation (scan.py). Yet parsing them was ~40% of the child's parse, and their objects
most of its heap. So the streamed parse (loading.stream) cuts each event's args object out of a piece
before orjson parses it, and puts it back as an ArgsText (_cargs.c): the object's text and its top-level
correlation, read from that text. The rewritten trace writes the text as it was read (orjson.Fragment).
On hta_trace_diff_control's 4x replica the 213 pieces parse in ~0.45 s instead of 0.55-0.59 s (cut 0.10,
orjson 0.33, put back 0.01), and the CLI's load took 3.49 s instead of 3.81 (bench_load, 5 rounds).
Args whose text could read differently than their parse are parsed as before (_cargs.c says which: a
string with an escape, a correlation that is not a plain integer, deep nesting).

What the parse checked is still checked, only later: every cut text is parsed as JSON once the trace is
written out (Checks), before the load may succeed, and a text that is not JSON refuses the load in the
sentence the whole-file parse gives. The passes that change args (prepare._scan_args, the rebase's nested
ts) first turn them back into the objects orjson makes of the same text (materialize). Without the
compiled module nothing is cut.
"""
from __future__ import annotations

import orjson

try:  # absent where no C compiler built it: then every args is parsed, as before
    from kineto_sql.loading import _cargs
except ImportError:
    _cargs = None

if _cargs is not None:
    from kineto_sql.loading.events import orjson_keys

    _cargs.use_keys(orjson_keys())
    ArgsText = _cargs.ArgsText
    # orjson.dumps's `default`: an ArgsText is written as its text
    write_default = _cargs.fragment
else:
    class ArgsText:  # (never made: `type(args) is ArgsText` is False for every args)
        pass

    write_default = None


class NotJSON(Exception):
    """Some args text cut out of the parse is not JSON as orjson reads it."""


def parse_cut(piece: bytes, parse, texts: list):
    """parse(piece) with its events' args objects cut out and put back as ArgsText (the buffers they lie in
    appended to `texts`, to be checked); parse(piece) itself where the piece cannot be cut exactly."""
    cut = _cargs.cut(piece) if _cargs is not None else None
    if cut is None:
        return parse(piece)
    text, cut_args = cut
    items = parse(text)
    if items is None or not _cargs.put_back(items, cut_args):
        return parse(piece)
    texts.extend(_cargs.texts_of(cut_args))
    return items


class Checks:
    """The cut args texts still to check, and `refuse()`, which raises the load's error for one that is not
    JSON. They are checked once the trace is written (PreparedTrace.verify): in the loader's child, while
    the engine's end-of-file pass runs on the other core."""

    def __init__(self, texts: list, refuse):
        self._texts = texts
        self._refuse = refuse

    def run(self) -> None:
        texts = self._texts
        while texts:
            try:
                orjson.loads(texts.pop())  # (each a `[text,...]` of one piece's cut args)
            except orjson.JSONDecodeError:
                self.refuse()

    def refuse(self):
        """Raises the load's error (`refuse` given at the start raises it)."""
        self._texts.clear()
        self._refuse()


def materialize(events: list) -> None:
    """Every ArgsText args becomes what orjson parses of its text (the objects the parse made before);
    NotJSON where one does not parse."""
    if _cargs is None:
        return
    for e in events:
        if type(e) is dict:
            args = e.get("args")
            if type(args) is ArgsText:
                try:
                    e["args"] = orjson.loads(args.text)
                except orjson.JSONDecodeError as exc:
                    raise NotJSON(str(exc)) from None


def args_of(e: dict):
    """e's args as a dict (parsed from the text when kept as text), or what else the event holds there."""
    args = e.get("args")
    return orjson.loads(args.text) if type(args) is ArgsText else args
