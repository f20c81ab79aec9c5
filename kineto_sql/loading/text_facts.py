"""What prepare asks of a trace's whole text: a null, an integer beyond int64, a timestamp written as a
string, a string escape the engine would keep as written, and whether the timestamp rebase may apply; gathered piece by piece beside the streamed parse
(TextFacts), or by a helper process that reads the file again while the parse runs (FactsHelper).

Each fact is a search of the text (rawcheck, rebase), and each is a "maybe": a fact seen where nothing
needs it only costs the pass it lets run, which then changes nothing (a null that is in no arg, a
fraction that needs no rebase). The searches are a fifth of the loader child's work before the engine
gets its first byte (87 ms of 0.58 s on a 35 MB trace, where the engine's process waits idle), so the
child hands them to a helper: a forked process at the lowest priority, which runs on the core the
engine's process leaves idle. The helper searches the whole text, cut into blocks just after a `}`; no
match of any search holds a `}`, nor does a search look at a byte before its match that a cut could
hide but a `}` (null_token's `:` `,` `[`, the sign and dot of a digit run), so its facts are those of
the parse's pieces, plus at most the `"traceEvents": [` the pieces leave out (`[null` there: a maybe).
Measured with bench/profile_load.py (medians of 7 fresh CLI-style loads of that trace): the child's parse
ends at 335 ms instead of 415, the engine's first piece comes at 601 ms instead of 688, the load is done at
1173 ms instead of 1257; on its 4x replica (112 MB) the first piece comes 300 ms sooner.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal

from kineto_sql.loading import forked
from kineto_sql.loading.rawcheck import escape_token, integer_beyond_int64, integer_orjson_rounds, null_token
from kineto_sql.loading.rebase import TS_STRING, TS_UNUSUAL, RebaseEvidence


class Fallback(Exception):
    """The streamed parse cannot stand for the whole-text one here; read the file whole."""


class NeedsRebase(Exception):
    """The text shows timestamps that may need the rebase: the parse so far cannot be used."""


class TextFacts:
    """The facts, seen a piece at a time (a piece is whole events, so no token is cut); `watch_rebase`
    raises NeedsRebase as soon as the rebase may apply."""

    def __init__(self, watch_rebase: bool):
        self.rebase = RebaseEvidence() if watch_rebase else None
        self.null = self.huge = self.string_ts = self.escape = False

    def see(self, piece: bytes) -> None:
        self.null = self.null or null_token(piece)
        self.escape = self.escape or escape_token(piece)
        unusual = TS_UNUSUAL.search(piece)  # (a string timestamp is one; none is found before the first)
        if unusual is not None and not self.string_ts:
            self.string_ts = bool(TS_STRING.search(piece, unusual.start()))
        if integer_beyond_int64(piece):
            self.huge = True
            if integer_orjson_rounds(piece):
                raise Fallback  # orjson read an integer of it as a float: the whole text is parsed exactly
        if self.rebase is not None:
            self.rebase.see(piece, unusual is not None)
            if self.rebase.may_rebase:
                raise NeedsRebase

    def finish(self) -> None:
        """Nothing is pending: every piece was seen as it passed."""

    def close(self) -> None:
        pass


class FactsHelper:
    """TextFacts(watch_rebase=True) of the whole text, which `parts()` gives in the helper as (text, where
    it begins), cut just after a `}` as stream's span pass reads it; for a parse that shows it every piece
    and calls finish() at its end: `see` raises what the helper has
    answered so far (NeedsRebase, Fallback), `finish` waits for its answer. A helper that ends without
    one gives Fallback (the whole-text path searches the text itself)."""

    def __init__(self, parts):
        self._pid, self._reader = forked.start(_helper, parts)
        self._answered = False
        self.null = self.huge = self.string_ts = self.escape = False

    def see(self, piece: bytes) -> None:
        if not self._answered and self._reader.poll():
            self._take()

    def finish(self) -> None:
        if not self._answered:
            self._take()

    def _take(self) -> None:
        try:
            answer = self._reader.recv()
        except (EOFError, OSError):
            answer = "fallback"
        self._answered = True
        self.close()
        if answer == "rebase":
            raise NeedsRebase
        if answer == "fallback":
            raise Fallback
        self.null, self.huge, self.string_ts, self.escape = answer

    def close(self) -> None:
        if self._pid is None:
            return
        self._reader.close()
        pid, self._pid = self._pid, None
        forked.end(pid)


def _helper(parts, writer) -> None:
    status = 0
    try:
        _end_with_parent()
        with contextlib.suppress(OSError):
            os.nice(19)  # the parse and the engine's process come first; this fills an idle core
        facts = TextFacts(watch_rebase=True)
        try:
            for text, _ in parts():
                facts.see(text)
            answer = (facts.null, facts.huge, facts.string_ts, facts.escape)
        except NeedsRebase:
            answer = "rebase"
        except (Fallback, OSError):
            answer = "fallback"  # (the parse reads the same file: it meets the same error and says it)
        writer.send(answer)
    except BaseException:
        status = 1
    finally:
        os._exit(status)


_PR_SET_PDEATHSIG = 1


def _end_with_parent() -> None:
    """Have the kernel end this process when the one that forked it ends (Linux; elsewhere the parse's
    close() ends it, and a parse killed outright leaves it to finish reading on its own)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
