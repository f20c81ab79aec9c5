"""diagnose's critical path over its two query processes, on one trace: what runs serially, and on which side.

`diagnose` on 2+ cores loads the trace, builds the lib modules its first two queries share (serially, in
this process, before the fork), then the parent and a forked child take the queries from one shared list
(kineto_sql.run.pool). Its wall time is the load, plus that serial build, plus the longer of the two
sides. This runs diagnose_trace exactly so (jobs=2) and prints each shared module's build, and each side's
queries in the order it ran them, with wall and CPU seconds (CPU is what a step costs when other work
shares the machine), then the three sums. A query's CPU includes the modules it built first.

    python bench/profile_pool.py TRACE [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from kineto_sql import open_trace
from kineto_sql.run import pool as query_pool
from kineto_sql.diagnose.run import diagnose_trace, query_plan


def profile(trace: Path) -> dict:
    fd, name = tempfile.mkstemp(prefix="kineto-pool-", suffix=".jsonl")
    os.close(fd)  # each row is appended by whichever process ran it
    log = Path(name)
    attempt, run_all = query_pool._attempt, query_pool.run_all
    started = [0.0]

    def write(**row) -> None:
        with open(log, "a") as f:  # both processes append; one short line each
            f.write(json.dumps(row) + "\n")

    def timed_attempt(tp, run, item, on_start):
        t, c = time.perf_counter(), time.process_time()
        outcome = attempt(tp, run, item, on_start)
        write(side="parent" if os.getpid() == parent else "child", query=item.id, start=t - started[0],
              wall=time.perf_counter() - t, cpu=time.process_time() - c)
        return outcome

    def timed_run_all(tp, items, run, needs, jobs=1, on_start=None, build=None):
        def timed_build(tp, module):
            t, c = time.perf_counter(), time.process_time()
            build(tp, module)
            write(side="serial", query=module, start=t - started[0], wall=time.perf_counter() - t,
                  cpu=time.process_time() - c)
        return run_all(tp, items, run, needs, jobs, on_start, timed_build if build else None)

    parent = os.getpid()
    query_pool._attempt, query_pool.run_all = timed_attempt, timed_run_all
    try:
        query_plan()
        t = time.perf_counter()
        tp = open_trace(trace, jobs=2)
        load_s = time.perf_counter() - t
        started[0] = time.perf_counter()
        with tp:
            diagnose_trace(tp, jobs=2)
        total_s = time.perf_counter() - started[0]
    finally:
        query_pool._attempt, query_pool.run_all = attempt, run_all
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    log.unlink()
    return {"trace": str(trace), "load_s": load_s, "queries_s": total_s, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--json", type=Path, help="write every row here")
    args = ap.parse_args()
    result = profile(args.trace)
    rows = result["rows"]
    print(f"{args.trace.name}: load {result['load_s']:.2f} s; queries {result['queries_s']:.2f} s wall")
    for side in ("serial", "parent", "child"):
        mine = sorted((r for r in rows if r["side"] == side), key=lambda r: r["start"])
        print(f"\n{side}: {sum(r['wall'] for r in mine):.2f} s wall, {sum(r['cpu'] for r in mine):.2f} s CPU")
        for r in mine:
            if r["cpu"] >= 0.01:
                print(f"  {r['start']:7.2f} {r['wall']:6.2f} {r['cpu']:6.2f}  {r['query']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
