"""Load time and peak RSS: kineto-sql's loader vs the bare engine vs HTA 0.5.0's TraceAnalysis load.

Each measurement runs in its own fresh process; the three sides run interleaved (A B C A B C ...),
`--repeat` rounds, and medians are reported, so a noisy shared machine disturbs every side alike.

Per trace: JSON MB; kineto-sql load s (open_trace: read, prepare, engine start, ingest, metadata
tables) with its split (prepare s: read + parse + fixes; ingest s: the rest); bare s (the same engine
started and fed the decompressed file as it is, nothing prepared: what any loader must at least pay);
loader overhead % = (load - bare) / bare; HTA load s (TraceAnalysis constructor: parse, align, filter);
each side's peak RSS (the process's own ru_maxrss; kineto-sql's is taken right after open_trace, before
the split is timed). A fourth side loads as the CLI does on 2+ cores (open_trace jobs=2, the loader child
started before the imports), compared on whole-process wall with the bare engine's whole process; it
reports the largest process's RSS and the peak PSS of its process tree (what both held at once).

    python bench/bench_load.py --hta-python /work/hta-venv/bin/python [--repeat 3]
    python bench/bench_load.py --hta-python ... --trace T.json.gz --sizes 1 2 4   # replicated (replicate.py)
    python bench/bench_load.py --hta-python ... --trace T.json.gz --original --sizes 4   # T itself, then 4x

Each size, 1 too, is written by replicate.py as compact JSON without gzip: the bare engine reads that ~6%
faster than Kineto's own text, so a size-1 row shows a higher overhead than the file itself (--original).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import (EARLY_START, KINETO_PYTHON, RSS_SNIPPET, TRACE_SETS, hta_dir_for, hta_python, interleaved, json_mb,  # noqa: E402
                    markdown, median, write_results)
from replicate import _read, replicate, write  # noqa: E402

# The split: the loader's own timings when it reports them (a streaming loader overlaps the two), else
# prepare_file and open_prepared timed apart (they are what open_trace runs, in that order), after the
# peak RSS of the load itself was taken (the second pass would raise it).
KINETO_LOAD = RSS_SNIPPET + """
import sys, time, resource
from pathlib import Path
from kineto_sql import open_trace
from kineto_sql.loading import load as L
t0 = time.perf_counter(); tp = open_trace(sys.argv[1]); t = time.perf_counter() - t0
load_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
timings = getattr(tp.report, 'timings', None) or {}
if not timings:
    tp.close()
    p = Path(sys.argv[1]); t1 = time.perf_counter(); prepared = L.prepare_file(p); t2 = time.perf_counter()
    L.open_prepared(prepared, p).close(); t3 = time.perf_counter()
    timings = {'prepare_s': t2 - t1, 'ingest_s': t3 - t2}
_report(load_s=t, prepare_s=timings['prepare_s'], ingest_s=timings['ingest_s'], load_rss_mb=load_rss_kb / 1024)
"""

# open_trace as the CLI loads on 2+ cores: the loader child started before the heavy imports (the console
# script's early start), the parent importing and starting the engine meanwhile. Compared on whole-process
# wall time (imports included on every side: the point is what they overlap).
KINETO_LOAD_2 = RSS_SNIPPET + EARLY_START + """
from kineto_sql import open_trace
tp = open_trace(sys.argv[1], jobs=2)
_report()
"""

# The same engine, started and fed the file as it is. Started inside the timing: open_trace starts one too.
BARE_LOAD = RSS_SNIPPET + """
import sys, time, gzip
from kineto_sql import EngineChoice, KinetoTraceProcessor
raw = open(sys.argv[1], 'rb').read()
raw = gzip.decompress(raw) if raw[:2] == b'\\x1f\\x8b' else raw
t0 = time.perf_counter()
tp = KinetoTraceProcessor(EngineChoice('wasm')); t1 = time.perf_counter()
tp.load_bytes(raw); t = time.perf_counter() - t0
_report(load_s=t, start_s=t1 - t0)
"""

HTA_LOAD = RSS_SNIPPET + """
import sys, time, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter(); a = TraceAnalysis(trace_dir=sys.argv[1]); t = time.perf_counter() - t0
_report(load_s=t)
"""


def measure(label: str, f: Path, args, hta: str, tmp: Path) -> dict:
    sides = {"kineto": (args.kineto_python, KINETO_LOAD, str(f)),
             "kineto2": (args.kineto_python, KINETO_LOAD_2, str(f)),
             "bare": (args.kineto_python, BARE_LOAD, str(f))}
    if hta is not None:
        sides["hta"] = (hta, HTA_LOAD, str(hta_dir_for([f], tmp)))
    if args.before_python:
        sides["before"] = (args.before_python, KINETO_LOAD, str(f))
        sides["before2"] = (args.before_python, KINETO_LOAD_2, str(f))
    runs = interleaved(sides, args.repeat)
    if hta is None:  # (--no-hta: its columns read nan)
        runs["hta"] = [{"load_s": math.nan, "wall_s": math.nan, "peak_rss_mb": math.nan, "peak_tree_pss_mb": math.nan}]
    k, b, h = ({key: median(runs[side], key) for key in ("load_s", "wall_s", "peak_rss_mb")}
               for side in ("kineto", "bare", "hta"))
    row = {
        "trace": label, "json_mb": json_mb(f),
        "kineto_load_s": k["load_s"], "prepare_s": median(runs["kineto"], "prepare_s"),
        "ingest_s": median(runs["kineto"], "ingest_s"), "bare_s": b["load_s"],
        "loader_overhead_pct": 100 * (k["load_s"] - b["load_s"]) / b["load_s"],
        "kineto_wall_s": k["wall_s"], "bare_wall_s": b["wall_s"], "hta_wall_s": h["wall_s"],
        "hta_load_s": h["load_s"], "kineto_over_hta": k["load_s"] / h["load_s"],
        "kineto_rss_mb": median(runs["kineto"], "load_rss_mb"), "bare_rss_mb": b["peak_rss_mb"],
        "hta_rss_mb": h["peak_rss_mb"], "runs": runs,
        "kineto2_wall_s": median(runs["kineto2"], "wall_s"),
        "kineto2_rss_mb": median(runs["kineto2"], "peak_rss_mb"),
        "kineto2_pss_mb": median(runs["kineto2"], "peak_tree_pss_mb"),
        "hta_pss_mb": median(runs["hta"], "peak_tree_pss_mb"),
    }
    row["kineto2_overhead_wall_pct"] = 100 * (row["kineto2_wall_s"] - b["wall_s"]) / b["wall_s"]
    row["rss_over_hta"] = row["kineto_rss_mb"] / row["hta_rss_mb"]
    if args.before_python:
        for key in ("load_s", "prepare_s", "ingest_s", "load_rss_mb"):
            row[f"before_{key}"] = median(runs["before"], key)
        row["before_overhead_pct"] = 100 * (row["before_load_s"] - row["bare_s"]) / row["bare_s"]
        row["before2_wall_s"] = median(runs["before2"], "wall_s")
        row["before2_pss_mb"] = median(runs["before2"], "peak_tree_pss_mb")
        row["before2_overhead_wall_pct"] = 100 * (row["before2_wall_s"] - b["wall_s"]) / b["wall_s"]
        row["before_rss_over_hta"] = row["before_load_rss_mb"] / row["hta_rss_mb"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hta-python", help="python of the HTA 0.5.0 venv (or $KINETO_SQL_HTA_PYTHON)")
    ap.add_argument("--no-hta", action="store_true", help="leave HTA's side out (no HTA venv at hand)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (median reported)")
    ap.add_argument("--kineto-python", default=KINETO_PYTHON)
    ap.add_argument("--sets", nargs="*", default=list(TRACE_SETS))
    ap.add_argument("--trace", type=Path, help="one trace, replicated --sizes times (replaces --sets)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--original", action="store_true", help="with --trace: also measure the file as it is, "
                    "first (each size, 1 too, is a compact rewrite, which the bare engine reads faster)")
    ap.add_argument("--name", default="bench_load", help="results file name under bench/results/")
    ap.add_argument("--before-python", help="a python that imports an earlier kineto-sql (the python of a venv "
                    "with an older commit installed: git worktree add /tmp/old REV && python3 -m venv /tmp/oldvenv "
                    "&& /tmp/oldvenv/bin/pip install /tmp/old): measured as two more interleaved sides, 'before' "
                    "(in-process) and 'before2' (the CLI's two processes)")
    args = ap.parse_args()
    hta = None if args.no_hta else hta_python(args.hta_python)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kineto_bench_load_") as tmp:
        if args.trace:
            if not args.trace.exists():
                sys.exit(f"{args.trace}: no such trace")
            if args.original:
                rows.append(measure(f"{args.trace.name.split('.')[0]} (the file as it is)", args.trace, args, hta,
                                    Path(tmp)))
                print("the file as it is: done", file=sys.stderr, flush=True)
            source = _read(args.trace)
            for n in args.sizes:
                path = Path(tmp) / f"{args.trace.name.split('.')[0]}_x{n}.json"
                write(replicate(source, n), path)
                rows.append(measure(f"{args.trace.name.split('.')[0]} {n}x", path, args, hta, Path(tmp)))
                path.unlink()
                print(f"{n}x: done", file=sys.stderr, flush=True)
        else:
            for set_name in args.sets:
                for f in TRACE_SETS[set_name]:
                    rows.append(measure(f"{set_name}/{f.name}", f, args, hta, Path(tmp)))
                    print(f"{set_name}/{f.name}: done", file=sys.stderr, flush=True)
    path = write_results(args.name, rows)
    print(markdown(rows, [("trace", "trace", ""), ("json_mb", "JSON MB", ".1f"),
                          ("prepare_s", "prepare s", ".2f"), ("ingest_s", "ingest s", ".2f"),
                          ("kineto_load_s", "load s", ".2f"), ("bare_s", "bare s", ".2f"),
                          ("loader_overhead_pct", "overhead % of bare", ".0f"), ("hta_load_s", "HTA load s", ".2f"),
                          ("kineto_over_hta", "load/HTA", ".2f"), ("kineto_rss_mb", "load RSS MB", ".0f"),
                          ("bare_rss_mb", "bare RSS MB", ".0f"), ("hta_rss_mb", "HTA RSS MB", ".0f"),
                          ("rss_over_hta", "RSS load/HTA", ".2f")]))
    print("\nThe CLI's load on 2+ cores (loader child started before the imports), whole processes:\n" + markdown(rows, [
        ("trace", "trace", ""), ("kineto2_wall_s", "load, 2 processes s", ".2f"), ("bare_wall_s", "bare s", ".2f"),
        ("kineto2_overhead_wall_pct", "overhead % of bare", ".0f"), ("hta_wall_s", "HTA load s", ".2f"),
        ("kineto2_rss_mb", "largest RSS MB", ".0f"), ("kineto2_pss_mb", "tree PSS MB", ".0f"),
        ("hta_rss_mb", "HTA RSS MB", ".0f"), ("hta_pss_mb", "HTA PSS MB", ".0f")]))
    if args.before_python:
        print("\nbefore (--before-python), same rounds:\n" + markdown(rows, [
            ("trace", "trace", ""), ("before_prepare_s", "prepare s", ".2f"), ("before_ingest_s", "ingest s", ".2f"),
            ("before_load_s", "load s", ".2f"), ("bare_s", "bare s", ".2f"),
            ("before_overhead_pct", "overhead % of bare", ".0f"), ("before_load_rss_mb", "load RSS MB", ".0f"),
            ("hta_rss_mb", "HTA RSS MB", ".0f"), ("before_rss_over_hta", "RSS load/HTA", ".2f")]))
        print("\nbefore, the CLI's load on 2+ cores, same rounds:\n" + markdown(rows, [
            ("trace", "trace", ""), ("before2_wall_s", "load, 2 processes s", ".2f"), ("kineto2_wall_s", "now s", ".2f"),
            ("bare_wall_s", "bare s", ".2f"), ("before2_overhead_wall_pct", "overhead % of bare", ".0f"),
            ("kineto2_overhead_wall_pct", "now %", ".0f"), ("before2_pss_mb", "tree PSS MB", ".0f"),
            ("kineto2_pss_mb", "now PSS MB", ".0f")]))
    print(f"\nWall seconds in-process, medians of {args.repeat} interleaved rounds; RSS is each process's peak. "
          f"(results: {path})")


if __name__ == "__main__":
    main()
