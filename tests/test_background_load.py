"""open_trace(jobs=2): the trace is prepared in a child process and streamed to the engine here. The engine
ends up with the same trace and the same report as a one-process load; errors are the same sentences; a
child that dies is named, never half-used; a preparation started early is taken only for the same file."""
from __future__ import annotations

import faulthandler
import gzip
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from kineto_sql import open_trace
from kineto_sql.cli.launch import early_trace
from kineto_sql.errors import TraceInputError
from kineto_sql.loading import background, prepare
from kineto_sql.loading.source import read_bytes
from tests.kineto_builder import Kernel, KinetoTrace, Launch, ProfilerStep

pytestmark = pytest.mark.skipif(not background.available(), reason="os.fork is not available on this platform")
COUNTS = ("SELECT (SELECT count(*) FROM slice) AS slices, (SELECT count(*) FROM flow) AS flows, "
          "(SELECT count(*) FROM args) AS args, (SELECT count(*) FROM thread) AS threads")


def _overlapping(tmp_path: Path, n: int = 30, overlap: bool = True) -> Path:
    """n launch/kernel pairs; kernel 1 overlaps kernel 0 on its stream (unless not `overlap`), so the trace
    is rewritten."""
    events = [ProfilerStep(1, ts_us=0, dur_us=100 * n + 100)]
    shift = 30 if overlap else 0
    for i in range(n):
        events.append(Launch(correlation=i + 1, ts_us=10 + 100 * i, dur_us=8))
        events.append(Kernel(correlation=i + 1, ts_us=50 + 100 * i - (shift if i == 1 else 0), dur_us=80 if i == 0 else 60))
    return KinetoTrace(events, {"distributedInfo": {"rank": 2, "world_size": 4}}).write(tmp_path)


def _facts(tp) -> tuple:
    fixes = [(f.kind, f.count, tuple(f.examples)) for f in tp.report.fixes]
    return tp.df(COUNTS).values.tolist(), fixes, tp.report.rewritten, tp.trace_metadata, tp.rank


@pytest.mark.parametrize("unchanged", [False, True])
def test_a_child_prepared_load_is_the_one_process_load(tmp_path, monkeypatch, unchanged):
    path = _overlapping(tmp_path, n=300, overlap=not unchanged)
    monkeypatch.setattr(background, "SLICE_BYTES", 4096)  # an unchanged trace goes in many slices
    with open_trace(path) as tp:
        serial = _facts(tp)
    with open_trace(path, jobs=2) as tp:
        streamed = _facts(tp)
    assert streamed == serial
    assert serial[2] is (not unchanged)
    assert serial[4] == 2
    if not unchanged:
        assert ("overlap_lane", 1) in [(k, c) for k, c, _ in serial[1]]


def test_bad_input_is_the_same_sentence(tmp_path):
    bad = tmp_path / "cut.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1')
    with pytest.raises(TraceInputError) as serial:
        open_trace(bad)
    with pytest.raises(TraceInputError) as streamed:
        open_trace(bad, jobs=2)
    assert str(streamed.value) == str(serial.value) and "truncated JSON" in str(serial.value)


def test_a_child_that_dies_is_named(tmp_path, monkeypatch):
    def die(path, on_size=None, check=None, mapped=False, args_as_written=False):
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(background, "prepare_path", die)
    with pytest.raises(background.LoaderDied, match="killed by signal 9.*--jobs 1"):
        open_trace(_overlapping(tmp_path), jobs=2)


def test_a_trace_cut_short_while_the_child_maps_it_is_named(tmp_path, monkeypatch):
    """The child maps a plain trace file (source.read_bytes mapped=True); a file truncated under the map
    kills it with SIGBUS at the next read of a lost page: said as the file cut short, not as memory."""
    def read_then_cut(path, on_size=None, check=None, mapped=False, args_as_written=False):
        assert mapped
        faulthandler.disable()  # (pytest's, inherited: the death below is the point, not a crash to dump)
        text = read_bytes(path, check, mapped)
        os.truncate(path, 0)
        text[len(text) - 1]  # a page past the new end: SIGBUS
        raise AssertionError("the truncated map was read")

    monkeypatch.setattr(background, "prepare_path", read_then_cut)
    with pytest.raises(background.LoaderDied, match="cut short while it was being read.*SIGBUS"):
        open_trace(_plain(_overlapping(tmp_path, n=3000)), jobs=2)


def test_the_child_maps_a_plain_file_and_gets_the_read_bytes(tmp_path):
    gz = _overlapping(tmp_path)
    path = _plain(gz)
    mapped = read_bytes(path, mapped=True)
    assert type(mapped) is not bytes and mapped[:] == path.read_bytes() == read_bytes(path)
    assert read_bytes(gz, mapped=True) == path.read_bytes()  # (a gzip file is inflated, not mapped)


def _plain(gz: Path) -> Path:
    path = gz.with_name("plain.json")
    path.write_bytes(gzip.decompress(gz.read_bytes()))
    return path


def _reading_threads() -> list:
    return [t for t in threading.enumerate() if t.name == "kineto-sql loader pipe"]


def test_the_pieces_are_read_ahead_on_a_thread_that_ends_with_the_load(tmp_path, monkeypatch):
    monkeypatch.setattr(background, "SLICE_BYTES", 4096)
    seen = []
    real_next = background._ReadAhead.next

    def next_message(self):
        seen.append(threading.current_thread() is threading.main_thread() and len(_reading_threads()))
        return real_next(self)

    monkeypatch.setattr(background._ReadAhead, "next", next_message)
    with open_trace(_overlapping(tmp_path, n=300), jobs=2) as tp:
        assert tp.df(COUNTS).slices[0] == 601
        assert _reading_threads() == []  # the thread has ended with the last message
    # many pieces, each taken on this thread while the reader ran (it may have ended before the end mark is taken)
    assert len(seen) > 10 and all(seen[:-1])


def test_a_child_that_dies_after_its_pieces_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(background, "SLICE_BYTES", 4096)
    # in the child, once its first chunk (here its only one, in many slices) is written, before the end mark
    monkeypatch.setattr(background, "_give_back_freed_memory", lambda: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(background.LoaderDied, match="killed by signal 9"):
        open_trace(_overlapping(tmp_path, n=300), jobs=2)
    assert _reading_threads() == []


def test_an_error_in_the_child_between_pieces_is_its_sentence(tmp_path, monkeypatch):
    monkeypatch.setattr(background, "SLICE_BYTES", 4096)

    def fail_after_one_chunk():
        raise ValueError("a writer bug")

    monkeypatch.setattr(background, "_give_back_freed_memory", fail_after_one_chunk)  # (in the child)
    with pytest.raises(background.LoaderDied, match="preparing the trace failed: ValueError: a writer bug"):
        open_trace(_overlapping(tmp_path, n=300), jobs=2)
    assert _reading_threads() == []


def test_a_reader_that_stops_early_ends_the_child_and_the_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(background, "SLICE_BYTES", 4096)
    streamed = background.StreamedPrepared(_overlapping(tmp_path, n=300))
    pieces = streamed.chunks()
    assert next(pieces)
    pieces.close()
    assert streamed.close() == "already closed"
    assert _reading_threads() == []


def test_an_early_start_is_taken_only_for_the_same_file(tmp_path):
    path = _overlapping(tmp_path)
    background.start_early(path)
    assert os.path.realpath(path) in background._EARLY
    with open_trace(path, jobs=2) as tp:
        assert tp.df(COUNTS).slices[0] == 61
    assert background._EARLY == {}
    background.start_early(path)
    os.utime(path, ns=(1, 1))  # the file changed after the early start: prepared again, from the new file
    assert background.take(path) is None
    background.start_early(path)
    background.cancel_early()
    assert background._EARLY == {}


@pytest.mark.parametrize("args, expected", [
    (["diagnose", "{trace}"], True),
    (["diagnose", "{trace}", "--format", "json"], True),
    (["sql", "{trace}", "SELECT 1"], True),
    (["diagnose", "{trace}", "--jobs", "1"], False),
    (["diagnose", "{trace}", "--jobs=1"], False),
    (["diagnose", "--help"], False),
    (["diagnose", "{missing}"], False),
    (["diagnose", "{dir}"], False),
    (["list"], False),
    (["run", "reading.op_table", "{trace}"], False),
])
def test_which_command_lines_start_early(tmp_path, args, expected):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": []}))
    filled = [a.format(trace=trace, missing=tmp_path / "no.json", dir=tmp_path) for a in args]
    assert (early_trace(filled) == trace) is (expected and (os.cpu_count() or 1) >= 2)


@pytest.mark.parametrize("code, rc, err", [(3, 3, ""), (None, 0, ""), ("stopped: a reason", 1, "stopped: a reason\n")])
def test_the_console_script_ends_as_sys_exit_would(code, rc, err):
    """exit_now skips the interpreter's teardown but keeps what it does that matters: atexit handlers run,
    buffered output is written, the exit status is sys.exit's."""
    import subprocess
    import sys

    script = ("import atexit, sys\n"
              "from kineto_sql.cli.launch import exit_now\n"
              "atexit.register(lambda: print('cleaned up'))\n"
              "sys.stdout.write('buffered ')\n"
              f"exit_now({code!r})\n"
              "print('never reached')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (rc, "buffered cleaned up\n", err)


def test_the_console_script_diagnoses_and_fails_as_before(tmp_path):
    import subprocess
    import sys

    run = [sys.executable, "-c", "import sys; from kineto_sql.cli.launch import main; sys.argv[0] = 'kineto-sql'; main()"]
    done = subprocess.run(run + ["diagnose", str(_overlapping(tmp_path)), "--format", "json"], capture_output=True,
                          text=True)
    assert done.returncode == 0 and json.loads(done.stdout)["result"]["traces"][0]["verdict"]["steps"] == 1
    done = subprocess.run(run + ["diagnose", str(tmp_path / "missing.json")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().endswith("no such file; check the path")


def test_the_args_pass_run_on_each_written_piece_is_the_one_pass(tmp_path, monkeypatch):
    """In the child the args pass runs on each piece as it is written (prepare args_as_written), after the
    other fixes rewrote the trace: the engine gets the same events and the report the same entries, in
    the same order, as from one pass over every event, with the args that need it spread over the pieces."""
    trace = json.loads(gzip.decompress(_overlapping(tmp_path, n=300).read_bytes()))
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    for k, e in enumerate(kernels[::37]):
        e["args"].update({"null arg": None, "huge": 2**64 + k, "nested": {"big": -(2**63) - 1 - k},
                          "escaped": f"caf\u00e9 {k}\nline"})
    path = tmp_path / "args.json"
    path.write_text(json.dumps(trace))
    monkeypatch.setattr(prepare, "CHUNK_EVENTS", 64)  # (the child is forked: it writes 64 events a piece)
    with open_trace(path) as tp:
        serial = _facts(tp)
    with open_trace(path, jobs=2) as tp:
        streamed = _facts(tp)
    assert streamed == serial
    kinds = {kind: count for kind, count, _ in serial[1]}
    assert kinds["overlap_lane"] == 1
    assert kinds["integer_beyond_int64_as_string"] == 2 * len(kernels[::37]) == 18
    assert kinds["null_arg_not_stored"] == 9 and kinds["escape_kept_by_engine"] == 9
    assert [kind for kind, _, _ in serial[1]][-3:] == ["escape_kept_by_engine", "integer_beyond_int64_as_string",
                                                     "null_arg_not_stored"]
