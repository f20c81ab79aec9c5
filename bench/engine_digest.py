"""One digest per engine table of a loaded trace, to show two loader installs give the engine the same data.

    python bench/engine_digest.py TRACE [TRACE...] [--out digests.json]
    python bench/engine_digest.py --compare before.json after.json

Each trace is loaded with this interpreter's kineto_sql (open_trace, allow_loss so a lossy trace is digested
too) and its tables read with bench/engine_digest.sql: slice (name, category, ts, dur, depth, its thread or
process), args (every key/value, tied to the slice, flow, process or counter that owns it), flow (both ends),
thread, process, counter; and the engine's non-zero stats (but its timings), listed. A table's digest is the sha256 of its rows sorted, so
it does not depend on the engine's internal ids or row order; the row count goes with it.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

_SECTION = re.compile(r"^-- section: (\w+)\s*$", re.MULTILINE)


def _sections() -> dict[str, str]:
    text = (Path(__file__).with_suffix(".sql")).read_text()
    marks = list(_SECTION.finditer(text))
    return {m.group(1): text[m.end():(marks[i + 1].start() if i + 1 < len(marks) else len(text))].strip().rstrip(";")
            for i, m in enumerate(marks)}


def _rows(tp, sql: str) -> list[tuple]:
    result = tp.query(sql)
    columns = result.column_names
    return [tuple(getattr(r, c) for c in columns) for r in result]


def _digest(rows: list) -> dict:
    text = "\n".join(sorted(repr(r) for r in rows))
    return {"rows": len(rows), "sha256": hashlib.sha256(text.encode()).hexdigest()}


def digest_trace(path: str) -> dict:
    from kineto_sql.engine.processor import EngineChoice
    from kineto_sql.loading.load import open_trace

    sql = _sections()
    tp = open_trace(path, EngineChoice(allow_loss=True))
    try:
        args = defaultdict(list)
        for set_id, key, value, kind in _rows(tp, sql["args"]):
            args[set_id].append((key, value, kind))

        def args_of(set_id):
            return tuple(sorted(args.get(set_id, ()), key=repr))

        slices = _rows(tp, sql["slice"])
        flows = _rows(tp, sql["flow"])
        processes = _rows(tp, sql["process"])
        counters = _rows(tp, sql["counter"])
        report = tp.report
        return {
            "slice": _digest([r[:5] + r[5:10] for r in slices]),
            "args": _digest([r[:10] + (args_of(r[10]),) for r in slices]
                            + [("flow",) + r[:8] + (args_of(r[8]),) for r in flows]
                            + [("process",) + r[:2] + (args_of(r[2]),) for r in processes]
                            + [("counter",) + r[:3] + (args_of(r[3]),) for r in counters]),
            "flow": _digest([r[:8] for r in flows]),
            "thread": _digest(_rows(tp, sql["thread"])),
            "process": _digest([r[:2] for r in processes]),
            "counter": _digest([r[:3] for r in counters]),
            "stats": sorted(list(r) for r in _rows(tp, sql["stats"])),  # (few: listed, not hashed)
            "ts_offset_ns": report.ts_offset_ns,
            "report": sorted((f.kind, f.count) for f in report.fixes) + sorted((d.reason, d.count) for d in report.dropped),
        }
    finally:
        tp.close()


def default_traces(root: Path) -> list[Path]:
    """The 80 golden and corpus traces: every trace file, rank directories file by file."""
    found = []
    for base in (root / "golden" / "traces", root.parent / "shared" / "corpus"):
        found += sorted(p for p in base.rglob("*.json.gz"))
    return found


def _key(path: str) -> str:
    """golden/traces/... or corpus/...: the checkout a trace was read from is not part of its key."""
    return re.sub(r"^.*?/(golden/traces/|corpus/)", r"\1", path)


def compare(before: dict, after: dict) -> int:
    before = {_key(k): v for k, v in before.items()}
    after = {_key(k): v for k, v in after.items()}
    differ = 0
    for trace in sorted(set(before) | set(after)):
        a, b = before.get(trace), after.get(trace)
        if a is None or b is None:
            print(f"{trace}: only {'after' if a is None else 'before'}")
            differ += 1
            continue
        changed = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        if changed:
            differ += 1
            for k in changed:
                print(f"{trace}: {k}: {a.get(k)} -> {b.get(k)}")
    print(f"{len(set(before) | set(after))} traces, {differ} differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*")
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        return compare(*(json.loads(Path(p).read_text()) for p in args.compare))
    root = Path(__file__).resolve().parent.parent
    traces = [Path(t) for t in args.traces] or default_traces(root)
    out = {}
    for path in traces:
        started = time.perf_counter()
        key = _key(str(path.resolve()))
        try:
            out[key] = digest_trace(str(path))
        except Exception as exc:  # a trace the loader refuses: its sentence is its digest
            out[key] = {"error": f"{type(exc).__name__}: {exc}".replace(str(path), "TRACE")}
        print(f"{key}: {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    text = json.dumps(out, indent=1, sort_keys=True)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
