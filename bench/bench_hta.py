"""HTA's four analyses (temporal, overlap, idle, kernel breakdown): HTA 0.5.0 vs kineto-sql, same traces.

Each side runs in its own fresh process per trace set: load every rank, then the four analyses; wall
seconds (load and analyses separately) and peak RSS. kineto-sql runs the hta_compat variants (the
numbers HTA prints) through kineto_sql.run.runner.run_query, loading the ranks one after another in one
process. Then `ranks` on dlrm_8rank with --jobs 1 vs --jobs 2 (peak RSS: the largest process).

    python bench/bench_hta.py --hta-python /work/hta-venv/bin/python [--repeat 3]

Sides run interleaved, `--repeat` rounds, medians reported (wall: the whole process).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import (CORPUS, HTA_FOUR, KINETO_HTA_FOUR, KINETO_PYTHON, RSS_SNIPPET, TRACE_SETS, hta_dir_for, hta_python, interleaved,  # noqa: E402
                    markdown, median, write_results)

RANKS_RUN = RSS_SNIPPET + """
import sys, time
from kineto_sql.fleet.executors import LocalExecutor
from kineto_sql.fleet.run import run_fleet
t0 = time.perf_counter()
rep = run_fleet(sys.argv[1], ("hta", "collectives"), LocalExecutor(int(sys.argv[2])), per_rank_tables=True).report
t = time.perf_counter() - t0
_report(total_s=t, straggler=rep.verdict.straggler)
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
            files = TRACE_SETS[set_name]
            runs = interleaved({"hta": (hta, HTA_FOUR, str(hta_dir_for(files, Path(tmp)))),
                                "kineto": (args.kineto_python, KINETO_HTA_FOUR, *map(str, files))}, args.repeat)
            h = {key: median(runs["hta"], key) for key in ("load_s", "analyses_s", "wall_s", "peak_rss_mb")}
            k = {key: median(runs["kineto"], key) for key in ("load_s", "analyses_s", "wall_s", "peak_rss_mb")}
            hta_total, k_total = h["load_s"] + h["analyses_s"], k["load_s"] + k["analyses_s"]
            rows.append({"set": set_name, "ranks": len(files),
                         "hta_load_s": h["load_s"], "hta_analyses_s": h["analyses_s"], "hta_total_s": hta_total,
                         "hta_wall_s": h["wall_s"], "hta_rss_mb": h["peak_rss_mb"],
                         "kineto_load_s": k["load_s"], "kineto_analyses_s": k["analyses_s"], "kineto_total_s": k_total,
                         "kineto_wall_s": k["wall_s"], "kineto_rss_mb": k["peak_rss_mb"],
                         "total_ratio": k_total / hta_total, "analyses_ratio": k["analyses_s"] / h["analyses_s"],
                         "rss_ratio": k["peak_rss_mb"] / h["peak_rss_mb"]})
            print(f"{set_name}: done", file=sys.stderr)
    ranks_rows = []
    for jobs in (1, 2):
        rs = interleaved({"ranks": (args.kineto_python, RANKS_RUN, str(CORPUS / "dlrm_8rank"), str(jobs))},
                         args.repeat)["ranks"]
        ranks_rows.append({"jobs": jobs, "total_s": median(rs, "total_s"), "wall_s": median(rs, "wall_s"),
                           "parent_rss_mb": median(rs, "peak_rss_mb"),
                           "largest_worker_rss_mb": median(rs, "children_rss_kb") / 1024,
                           "straggler": rs[-1]["straggler"]})
    path = write_results("bench_hta", {"analyses": rows, "ranks_dlrm_8rank": ranks_rows})
    print(markdown(rows, [("set", "set", ""), ("ranks", "ranks", ""), ("hta_load_s", "HTA load s", ".2f"),
                          ("hta_analyses_s", "HTA 4 analyses s", ".2f"), ("hta_rss_mb", "HTA RSS MB", ".0f"),
                          ("kineto_load_s", "kineto load s", ".2f"), ("kineto_analyses_s", "kineto 4 analyses s", ".2f"),
                          ("kineto_rss_mb", "kineto RSS MB", ".0f"), ("total_ratio", "total kineto/HTA", ".2f"),
                          ("analyses_ratio", "analyses kineto/HTA", ".2f"), ("rss_ratio", "RSS kineto/HTA", ".2f")]))
    print()
    print(markdown(ranks_rows, [("jobs", "ranks dlrm_8rank --jobs", ""), ("total_s", "total s", ".2f"),
                                ("parent_rss_mb", "parent RSS MB", ".0f"),
                                ("largest_worker_rss_mb", "largest worker RSS MB", ".0f"),
                                ("straggler", "straggler", "")]))
    print(f"\n(results: {path})")


if __name__ == "__main__":
    main()
