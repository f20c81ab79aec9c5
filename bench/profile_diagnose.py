"""Where diagnose's SQL time goes, stage by stage, on one trace (one process, one load).

Runs what `diagnose_trace` runs, in its order (capabilities, reading.verdict, reading.step_ledger, every
detector, reading.op_table), but first includes each kineto module a query depends on, one at a time in
dependency order, and times it: a shared table is charged to its own module, not to whichever query
happens to include it first. Prints wall and CPU seconds per stage (the engine runs in this process, so
CPU time is what a stage costs when other work shares the machine), largest CPU first, and the totals.

    python bench/profile_diagnose.py TRACE [--top 25] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kineto_sql import open_trace
from kineto_sql.diagnose.run import OP_TABLE, STEP_LEDGER, VERDICT, detectors
from kineto_sql.sql.includes import kineto_dependencies
from kineto_sql.run.runner import capabilities, resolve_spec, run_query
from kineto_sql.sql.literals import include_statement


def profile(trace: Path) -> tuple[float, list[tuple[str, float, float]]]:
    t0 = time.perf_counter()
    tp = open_trace(trace)
    load_s = time.perf_counter() - t0
    stages: list[tuple[str, float, float]] = []
    done: set[str] = set()

    def timed(name, fn):
        t, c = time.perf_counter(), time.process_time()
        fn()
        stages.append((name, time.perf_counter() - t, time.process_time() - c))

    timed("capabilities", lambda: capabilities(tp))
    specs = [resolve_spec(VERDICT), resolve_spec(STEP_LEDGER)] + detectors() + [resolve_spec(OP_TABLE)]
    with tp:
        for spec in specs:
            for module in kineto_dependencies(spec.path.read_text()):
                if module not in done:
                    done.add(module)
                    timed(module.removeprefix("kineto."), lambda m=module: tp.query(include_statement(m)))
            timed(spec.id, lambda s=spec: run_query(tp, s))
    return load_s, stages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", type=Path, help="write every stage's seconds here")
    args = ap.parse_args()
    if not args.trace.exists():
        sys.exit(f"{args.trace}: no such trace")
    load_s, stages = profile(args.trace)
    wall, cpu = sum(s[1] for s in stages), sum(s[2] for s in stages)
    print(f"load {load_s:.2f} s; SQL {wall:.2f} s wall, {cpu:.2f} s CPU over {len(stages)} stages")
    print(f"{'wall':>8}  {'cpu':>8}  {'cpu%':>5}  stage")
    for name, w, c in sorted(stages, key=lambda x: -x[2])[:args.top]:
        print(f"{w:8.2f}  {c:8.2f}  {100 * c / cpu:5.1f}  {name}")
    if args.json:
        args.json.write_text(json.dumps({"load_s": load_s, "stages": {n: {"wall_s": w, "cpu_s": c} for n, w, c in stages}},
                                        indent=1))


if __name__ == "__main__":
    main()
