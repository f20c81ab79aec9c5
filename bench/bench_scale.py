"""How cost grows with trace length: a trace replicated 1x/2x/4x/8x (bench/replicate.py: steps copied
with shifted timestamps and fresh ids), kineto-sql vs HTA 0.5.0 at each size, whole processes,
interleaved rounds, medians.

Per size: JSON MB; kineto-sql load (open_trace); kineto-sql diagnose (one process: load + every
detector + step table + op table); kineto-sql load + HTA's four analyses as SQL (hta_compat); HTA load +
four analyses (temporal, overlap, idle, kernel breakdown). Wall seconds of the whole process, the
in-process split, peak RSS (the largest process), peak tree PSS (what the process tree held at once),
CPU seconds of the tree, and the ratios; diagnose/HTA also as the median of each round's own ratio (the
two sides of a round ran under the same load). diagnose is the `kineto-sql diagnose` command itself, as a
user runs it (on 2+ cores: the trace prepared in a child process, the queries in two). Replicas go to a
temporary directory, never the repo.

    python bench/bench_scale.py --hta-python /work/hta-venv/bin/python [--sizes 1 2 4 8] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import (CORPUS, EARLY_START, HTA_FOUR, KINETO_HTA_FOUR, KINETO_PYTHON, RSS_SNIPPET, hta_dir_for, hta_python, interleaved, json_mb,  # noqa: E402
                    markdown, median, write_results)
from replicate import _read, replicate, write  # noqa: E402

KINETO_LOAD = RSS_SNIPPET + EARLY_START + """
from kineto_sql import open_trace
from kineto_sql.run.pool import default_jobs
tp = open_trace(sys.argv[1], jobs=default_jobs()); t = time.perf_counter() - t0
_report(load_s=t)
"""



def diagnose_command(kineto_python: str, path: Path, *extra: str) -> tuple:
    """`kineto-sql diagnose TRACE` as a user runs it (the console script of the venv of `kineto_python`),
    its JSON report written and discarded."""
    script = str(Path(kineto_python).parent / "kineto-sql")
    return ("command", [script, "diagnose", str(path), "--format", "json", "-o", os.devnull, "-q", *extra])

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hta-python", help="python of the HTA 0.5.0 venv (or $KINETO_SQL_HTA_PYTHON)")
    ap.add_argument("--kineto-python", default=KINETO_PYTHON)
    ap.add_argument("--trace", type=Path, default=CORPUS / "hta_trace_diff_control.json.gz")
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 2, 4, 8])
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds per size (median reported)")
    ap.add_argument("--serial", action="store_true", help="also time `diagnose --jobs 1` (one process)")
    ap.add_argument("--name", default="bench_scale", help="results file name under bench/results/")
    args = ap.parse_args()
    hta = hta_python(args.hta_python)
    if not args.trace.exists():
        sys.exit(f"{args.trace}: no such trace")
    source = _read(args.trace)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kineto_bench_scale_") as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"{args.trace.name.split('.')[0]}_x{n}.json.gz"
            write(replicate(source, n), path)
            hta_dir = hta_dir_for([path], Path(tmp))
            sides = {
                "load": (args.kineto_python, KINETO_LOAD, str(path)),
                "diagnose": diagnose_command(args.kineto_python, path),
                "k_hta4": (args.kineto_python, KINETO_HTA_FOUR, str(path)),
                "hta": (hta, HTA_FOUR, str(hta_dir)),
            }
            if args.serial:
                sides["diagnose_serial"] = diagnose_command(args.kineto_python, path, "--jobs", "1")
            runs = interleaved(sides, args.repeat)
            hta_total = median(runs["hta"], "wall_s")
            row = {
                "size": f"{n}x", "json_mb": json_mb(path),
                "kineto_load_s": median(runs["load"], "wall_s"),
                "diagnose_s": median(runs["diagnose"], "wall_s"),
                "k_hta4_s": median(runs["k_hta4"], "wall_s"),
                "k_analyses_s": median(runs["k_hta4"], "analyses_s"),
                "hta_s": hta_total,
                "hta_load_s": median(runs["hta"], "load_s"),
                "hta_analyses_s": median(runs["hta"], "analyses_s"),
                "diagnose_cpu_s": median(runs["diagnose"], "cpu_s"),
                "hta_cpu_s": median(runs["hta"], "cpu_s"),
                "diagnose_rss_mb": median(runs["diagnose"], "peak_rss_mb"),
                "diagnose_pss_mb": median(runs["diagnose"], "peak_tree_pss_mb"),
                "hta_pss_mb": median(runs["hta"], "peak_tree_pss_mb"),
                "k_hta4_rss_mb": median(runs["k_hta4"], "peak_rss_mb"),
                "hta_rss_mb": median(runs["hta"], "peak_rss_mb"),
                "runs": runs,
            }
            row["diagnose_over_hta"] = row["diagnose_s"] / hta_total
            row["k_hta4_over_hta"] = row["k_hta4_s"] / hta_total
            row["analyses_over_hta"] = row["k_analyses_s"] / row["hta_analyses_s"]
            row["rss_over_hta"] = row["diagnose_rss_mb"] / row["hta_rss_mb"]
            row["pss_over_hta"] = row["diagnose_pss_mb"] / row["hta_pss_mb"]
            # rounds are interleaved, so round i of each side ran under the same machine load
            row["diagnose_over_hta_by_round"] = [d["wall_s"] / h["wall_s"] for d, h in zip(runs["diagnose"], runs["hta"])]
            # the paired figure: the ratio of medians can take its two medians from different rounds, so one
            # slow round on either side moves it where the median of the rounds' own ratios does not
            row["diagnose_over_hta_paired"] = statistics.median(row["diagnose_over_hta_by_round"])
            if args.serial:
                row["diagnose_serial_s"] = median(runs["diagnose_serial"], "wall_s")
                row["diagnose_serial_rss_mb"] = median(runs["diagnose_serial"], "peak_rss_mb")
            rows.append(row)
            path.unlink()
            # each size as soon as it is measured, so a run cut short still reports what it finished
            print(f"{n}x: done: diagnose {row['diagnose_s']:.2f} s, kineto load+4 {row['k_hta4_s']:.2f} s, HTA load+4 "
                  f"{hta_total:.2f} s; diagnose/HTA {row['diagnose_over_hta']:.2f}, kineto 4/HTA 4 "
                  f"{row['k_hta4_over_hta']:.2f}, analyses only {row['analyses_over_hta']:.2f}; kineto load "
                  f"{row['kineto_load_s']:.2f} s; RSS diag/HTA {row['rss_over_hta']:.2f}; diagnose/HTA by round "
                  f"{' '.join(f'{r:.2f}' for r in row['diagnose_over_hta_by_round'])} (median "
                  f"{row['diagnose_over_hta_paired']:.2f})", file=sys.stderr, flush=True)
    out = write_results(args.name, rows)
    print(markdown(rows, [
        ("size", "size", ""), ("json_mb", "JSON MB", ".0f"), ("kineto_load_s", "kineto load s", ".2f"),
        ("diagnose_s", "diagnose s", ".2f"), ("k_hta4_s", "kineto load+4 HTA s", ".2f"),
        ("hta_s", "HTA load+4 s", ".2f"), ("diagnose_over_hta", "diagnose/HTA", ".2f"),
        ("diagnose_over_hta_paired", "diagnose/HTA, median of rounds", ".2f"),
        ("k_hta4_over_hta", "kineto 4/HTA 4 (whole)", ".2f"), ("analyses_over_hta", "analyses only k/HTA", ".2f"),
        ("diagnose_rss_mb", "diagnose RSS MB", ".0f"), ("k_hta4_rss_mb", "kineto 4 RSS MB", ".0f"),
        ("hta_rss_mb", "HTA RSS MB", ".0f"), ("rss_over_hta", "RSS diag/HTA", ".2f"),
        ("diagnose_pss_mb", "diagnose tree PSS MB", ".0f"), ("hta_pss_mb", "HTA tree PSS MB", ".0f"),
        ("diagnose_cpu_s", "diagnose CPU s", ".2f"), ("hta_cpu_s", "HTA CPU s", ".2f"),
        ("diagnose_serial_s", "diagnose --jobs 1 s", ".2f")]))
    print(f"\nAll times are whole-process wall seconds, medians of {args.repeat} interleaved rounds "
          f"(analyses only: in-process). (results: {out})")


if __name__ == "__main__":
    main()
