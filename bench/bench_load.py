"""Load time and peak RSS: kineto-sql's loader vs the bare engine vs HTA 0.5.0's TraceAnalysis load.

Each measurement runs in its own fresh process. Per trace file: JSON MB, kineto-sql load s (read,
prepare, ingest, metadata tables), bare-engine ingest s (the decompressed bytes straight into
KinetoTraceProcessor(EngineChoice('wasm')).load_bytes, no preparation), loader overhead %, HTA load s
(TraceAnalysis constructor: parse, align, filter), the ratio, and each one's peak RSS.

    python bench/bench_load.py --hta-python /work/hta-venv/bin/python [--repeat 3]

The three sides run interleaved, `--repeat` rounds; medians are reported.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import (KINETO_PYTHON, RSS_SNIPPET, TRACE_SETS, hta_dir_for, hta_python, interleaved, json_mb,  # noqa: E402
                    markdown, median, write_results)

KINETO_LOAD = RSS_SNIPPET + """
import sys, time
from kineto_sql import open_trace
t0 = time.perf_counter(); tp = open_trace(sys.argv[1]); t = time.perf_counter() - t0
_report(load_s=t)
"""

BARE_LOAD = RSS_SNIPPET + """
import sys, time, gzip
from kineto_sql import EngineChoice, KinetoTraceProcessor
raw = open(sys.argv[1], 'rb').read()
raw = gzip.decompress(raw) if raw[:2] == b'\\x1f\\x8b' else raw
tp = KinetoTraceProcessor(EngineChoice('wasm'))
t0 = time.perf_counter(); tp.load_bytes(raw); t = time.perf_counter() - t0
_report(load_s=t)
"""

HTA_LOAD = RSS_SNIPPET + """
import sys, time, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter(); a = TraceAnalysis(trace_dir=sys.argv[1]); t = time.perf_counter() - t0
_report(load_s=t)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hta-python", help="python of the HTA 0.5.0 venv (or $KINETO_SQL_HTA_PYTHON)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (median reported)")
    ap.add_argument("--kineto-python", default=KINETO_PYTHON)
    ap.add_argument("--sets", nargs="*", default=list(TRACE_SETS))
    args = ap.parse_args()
    hta = hta_python(args.hta_python)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for set_name in args.sets:
            for f in TRACE_SETS[set_name]:
                runs = interleaved({"kineto": (args.kineto_python, KINETO_LOAD, str(f)),
                                    "bare": (args.kineto_python, BARE_LOAD, str(f)),
                                    "hta": (hta, HTA_LOAD, str(hta_dir_for([f], Path(tmp))))}, args.repeat)
                k, b, h = ({key: median(runs[side], key) for key in ("load_s", "wall_s", "peak_rss_mb")}
                           for side in ("kineto", "bare", "hta"))
                rows.append({
                    "set": set_name, "trace": f.name, "json_mb": json_mb(f),
                    "kineto_load_s": k["load_s"], "bare_ingest_s": b["load_s"],
                    "loader_overhead_pct": 100 * (k["load_s"] - b["load_s"]) / k["load_s"],
                    "hta_load_s": h["load_s"], "kineto_over_hta": k["load_s"] / h["load_s"],
                    "kineto_rss_mb": k["peak_rss_mb"], "bare_rss_mb": b["peak_rss_mb"], "hta_rss_mb": h["peak_rss_mb"],
                })
                print(f"{set_name}/{f.name}: done", file=sys.stderr)
    path = write_results("bench_load", rows)
    print(markdown(rows, [("set", "set", ""), ("trace", "trace", ""), ("json_mb", "JSON MB", ".2f"),
                          ("kineto_load_s", "kineto-sql load s", ".3f"), ("bare_ingest_s", "bare ingest s", ".3f"),
                          ("loader_overhead_pct", "loader overhead %", ".0f"), ("hta_load_s", "HTA load s", ".3f"),
                          ("kineto_over_hta", "kineto/HTA", ".2f"), ("kineto_rss_mb", "kineto RSS MB", ".0f"),
                          ("bare_rss_mb", "bare RSS MB", ".0f"), ("hta_rss_mb", "HTA RSS MB", ".0f")]))
    print(f"\n(results: {path})")


if __name__ == "__main__":
    main()
