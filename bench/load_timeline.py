"""The timeline of one CLI-style 2-process load (open_trace jobs=2, the child started early), for one or two installs.

    python bench/load_timeline.py --trace T.json [--old OTHER/python] [--repeat 3]

Each side runs in a fresh process whose loader is observed from outside its code (wrapped functions: the
same names exist in the C loader at e773130 and in the msgspec one): in the child, when it started, read
the file, finished preparing, wrote its first and last piece; in the parent, the engine's start, the head,
each engine parse call (its time, and the time the parent waited for the next piece), the end-of-file pass
and the ingest tables. Times are seconds from the process's start (the snippet's first line), on the one
clock both processes share (CLOCK_MONOTONIC); CPU seconds are each process's own. Medians over --repeat.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import KINETO_PYTHON, run_child  # noqa: E402

# Set up before the early start (which forks the child, so the child carries the wrapped functions).
TIMELINE = """
import sys, time, os
t0 = time.perf_counter()
_log_fd = os.open(os.environ['TIMELINE_LOG'], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
def _mark(what, **kw):
    kw.update(what=what, pid=os.getpid(), t=time.perf_counter() - t0, cpu=time.process_time(), thread_cpu=time.thread_time())
    os.write(_log_fd, (__import__('json').dumps(kw) + '\\n').encode())
_mark('start')
from kineto_sql.loading import background as _bg
_child = _bg._child
def _timed_child(path, writer):
    _mark('child start')
    send = writer.send_bytes
    pieces = [0, 0]
    def sending(data, *a):
        if data == _bg._PIECE:
            pieces[0] += 1
            if pieces[0] == 1:
                _mark('child first piece')
        elif data[:1] == _bg._CONTROL:
            kind = __import__('pickle').loads(bytes(data[1:]))[0]
            if kind == 'end':
                _mark('child last piece written', pieces=pieces[0], bytes=pieces[1])
        else:
            pieces[1] += len(data)
        send(data, *a)
        if data[:1] == _bg._CONTROL:
            kind = __import__('pickle').loads(bytes(data[1:]))[0]
            _mark('child sent ' + kind)
    writer.send_bytes = sending
    prepare = _bg.prepare_path
    def timed_prepare(*a, **k):
        sized = k.get('on_size')
        def on_size(n):
            _mark('child read', bytes=n)
            sized(n)
        k['on_size'] = on_size
        out = prepare(*a, **k)
        _mark('child prepared', rewritten=bool(out.report.rewritten))
        return out
    _bg.prepare_path = timed_prepare
    _child(path, writer)
_bg._child = _timed_child
_waits = []
_next = _bg._ReadAhead.next
def _timed_next(self):
    a = time.perf_counter(); out = _next(self); _waits.append(time.perf_counter() - a); return out
_bg._ReadAhead.next = _timed_next
if len(sys.argv) == 2:
    _bg.start_early(__import__('pathlib').Path(sys.argv[1]))
_mark('imports start')
from kineto_sql import open_trace
from kineto_sql.engine import processor as _p, rpc_backend as _r
_mark('imports done')
_init = _p.KinetoTraceProcessor.__init__
def _timed_init(self, *a, **k):
    _mark('engine start'); _init(self, *a, **k); _mark('engine started')
_p.KinetoTraceProcessor.__init__ = _timed_init
_parses = []
_parse = _r.WasmRpcBackend.parse
def _timed_parse(self, chunk):
    if not _parses:
        _mark('first parse')
    a = time.perf_counter(); out = _parse(self, chunk); _parses.append((time.perf_counter() - a, len(chunk))); return out
_r.WasmRpcBackend.parse = _timed_parse
_eof = _r.WasmRpcBackend.notify_eof
def _timed_eof(self):
    _mark('eof start', parse_s=sum(p for p, _ in _parses), parses=len(_parses), wait_s=sum(_waits[1:]),
          first_wait_s=_waits[0] if _waits else None)
    out = _eof(self); _mark('eof done'); return out
_r.WasmRpcBackend.notify_eof = _timed_eof
tp = open_trace(sys.argv[1], jobs=2)
_mark('open_trace done')
print(__import__('json').dumps({}))
"""

# (event, process) pairs reported, in the order of a load
COLUMNS = [("child start", "child"), ("child read", "child"), ("imports done", "parent"), ("engine started", "parent"),
           ("child prepared", "child"), ("child sent head", "child"), ("first parse", "parent"),
           ("child first piece", "child"), ("child last piece written", "child"), ("eof start", "parent"),
           ("eof done", "parent"), ("open_trace done", "parent")]


def one(python: str, trace: Path) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as log:
        os.environ["TIMELINE_LOG"] = log.name
        whole = run_child(python, TIMELINE, str(trace), sample_pss=False)
        marks = [json.loads(line) for line in Path(log.name).read_text().splitlines()]
    parent = marks[0]["pid"]
    row = {"wall_s": whole["wall_s"], "tree_cpu_s": whole["cpu_s"]}
    for m in marks:
        side = "parent" if m["pid"] == parent else "child"
        row[f"{m['what']} ({side})"] = m["t"]
        row[f"{m['what']} ({side}) cpu"] = m["cpu"]
        row[f"{m['what']} ({side}) thread cpu"] = m["thread_cpu"]
        for key in ("parse_s", "parses", "wait_s", "first_wait_s", "pieces", "bytes", "rewritten"):
            if key in m:
                row[key] = m[key]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("--new", default=KINETO_PYTHON)
    ap.add_argument("--old", help="the python of a venv with the other install")
    ap.add_argument("--side", action="append", default=[], metavar="NAME=PYTHON", help="one more side")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sides = {"new": args.new} | ({"old": args.old} if args.old else {}) | dict(s.split("=", 1) for s in args.side)
    rows = {side: [] for side in sides}
    for round_number in range(args.repeat):  # (interleaved, each round starting one side later)
        order = list(sides)[round_number % len(sides):] + list(sides)[:round_number % len(sides)]
        for side in order:
            rows[side].append(one(sides[side], args.trace))
    for side, runs in rows.items():
        keys = [k for k in runs[0] if all(k in r for r in runs)]
        med = {k: round(statistics.median(r[k] for r in runs), 3) if not isinstance(runs[0][k], bool) else runs[0][k]
               for k in keys}
        print(json.dumps({"side": side, **med}))
        print(f"\n{side}: medians of {len(runs)} (s from process start; cpu = that process's own CPU so far)")
        for what, proc in COLUMNS:
            key = f"{what} ({proc})"
            if key in med:
                print(f"  {what:28s} {med[key]:7.3f}   cpu {med[key + ' cpu']:6.3f}   main thread cpu {med[key + ' thread cpu']:6.3f}")
        # What the wall is on two idle cores: the child's CPU to its first piece, then the engine's thread
        # from its first parse to the end (the other processes' work overlaps these).
        path = [r["child first piece (child) cpu"] + r["open_trace done (parent) thread cpu"] - r["first parse (parent) thread cpu"]
                for r in runs]
        print(f"  {'serial path cpu':28s} {statistics.median(path):.3f}   (child to its first piece + engine thread after it)")
        for k in ("parse_s", "parses", "wait_s", "first_wait_s", "pieces", "bytes", "rewritten", "wall_s", "tree_cpu_s"):
            if k in med:
                print(f"  {k:28s} {med[k]}")


if __name__ == "__main__":
    main()
