"""Where diagnose's SQL time goes, stage by stage, on one trace (one process, one load).

Runs what `diagnose_trace` runs, in its order (capabilities, the device name, then kineto_sql.diagnose.run's
query_plan: reading.verdict, reading.op_table, reading.step_ledger, reading.step_table, every detector; then
the what-if part: the dependency graph read into numpy, one replay per graph edit, the critical path's
node pieces (kineto.lib.dep_graph_buckets) and its replayed walk, as kineto_sql.whatif.annotate runs them),
but first includes each kineto module a query depends on, one at a time in dependency order, and times it:
a shared table is charged to its own module, not to whichever query happens to include it first. The
what-if stages are timed on every trace; diagnose runs them only where a finding of a rule with a graph
edit fired (`graph_needed` in the JSON). Prints wall and CPU seconds per stage (the engine runs in this process, so
CPU time is what a stage costs when other work shares the machine), largest CPU first, and the totals,
with how much each stage grew the engine's wasm heap (a high-water mark: it never shrinks).

    python bench/profile_diagnose.py TRACE [--top 25] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kineto_sql import open_trace
from kineto_sql.diagnose.run import query_plan
from kineto_sql.errors import KinetoSqlError
from kineto_sql.sql.includes import kineto_dependencies
from kineto_sql.run.runner import capabilities, resolve_spec, run_query, trace_device_name
from kineto_sql.sql.literals import include_statement
from kineto_sql.whatif.annotate import critical_path_shares
from kineto_sql.whatif.buckets import MODULE as BUCKETS
from kineto_sql.whatif.edits import EDITS
from kineto_sql.whatif.graph import MODULE as GRAPH
from kineto_sql.whatif.graph import _LOADED as LOADED_GRAPH
from kineto_sql.whatif.graph import load_graph
from kineto_sql.whatif.predict import predict

WHATIF = ("whatif.graph", "whatif.replay", "whatif.critical_path")
HEAP: list = []  # [{stage: bytes the engine's heap grew}, heap after the load] of the last profile_stages


def profile(trace: Path) -> tuple[float, list[tuple[str, float, float]]]:
    load_s, stages, _ = profile_stages(trace)
    return load_s, [s[:3] for s in stages]


def profile_stages(trace: Path) -> tuple[float, list[tuple[str, float, float, bool]], bool]:
    """(load seconds, (stage, wall s, CPU s, whether diagnose runs it on this trace) in run order, whether
    diagnose builds the what-if graph)."""
    t0 = time.perf_counter()
    tp = open_trace(trace)
    load_s = time.perf_counter() - t0
    stages: list[tuple[str, float, float]] = []
    # how much each stage grew the engine's heap (a high-water mark: the heap never shrinks)
    heap: dict[str, int] = {}
    HEAP[:] = [heap, tp.heap_bytes or 0]
    done: set[str] = set()

    def timed(name, fn):
        h = tp.heap_bytes or 0
        t, c = time.perf_counter(), time.process_time()
        fn()
        stages.append((name, time.perf_counter() - t, time.process_time() - c))
        heap[name] = (tp.heap_bytes or 0) - h

    timed("capabilities", lambda: capabilities(tp))
    timed("device_name", lambda: trace_device_name(tp))
    specs = query_plan()[0]
    fired: set[str] = set()

    def modules(sql: str) -> None:
        for module in kineto_dependencies(sql):
            if module not in done:
                done.add(module)
                timed(module.removeprefix("kineto."), lambda m=module: tp.query(include_statement(m)))

    with tp:
        for spec in specs:
            modules(spec.path.read_text())
            runs = []
            timed(spec.id, lambda s=spec: runs.append(_attempt(tp, s)))
            if runs[0] is not None and not runs[0].not_applicable and not runs[0].rows.empty:
                fired.add(spec.id)
        whatif_from = len(stages)
        has_device = bool(capabilities(tp).get("gpu") and capabilities(tp)["gpu"].present)
        # the graph's modules and the path's pieces' modules, each charged to itself
        modules(f"INCLUDE PERFETTO MODULE {GRAPH};\n{include_statement(BUCKETS)}")
        graphs = []
        timed(WHATIF[0], lambda: graphs.append(_attempt_graph(tp)))
        if graphs[0] is not None:
            LOADED_GRAPH.get(tp, lambda: graphs[0])  # as annotate keeps it for the critical path line
            timed(WHATIF[1], lambda: [predict(graphs[0], [rule], has_device) for rule in EDITS])
            timed(WHATIF[2], lambda: critical_path_shares(tp))
    # stages diagnose skips when no graph edit applies: the graph's own modules, the path, the replay
    needed = bool(fired & set(EDITS))
    return load_s, [(n, w, c, needed or i < whatif_from) for i, (n, w, c) in enumerate(stages)], needed


def _attempt(tp, spec):
    try:
        return run_query(tp, spec)
    except KinetoSqlError:
        return None


def _attempt_graph(tp):
    try:
        return load_graph(tp)
    except KinetoSqlError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", type=Path, help="write every stage's seconds here")
    args = ap.parse_args()
    if not args.trace.exists():
        sys.exit(f"{args.trace}: no such trace")
    t, c = time.perf_counter(), time.process_time()
    load_s, stages, graph_needed = profile_stages(args.trace)
    total_wall, total_cpu = time.perf_counter() - t, time.process_time() - c
    wall, cpu = sum(s[1] for s in stages), sum(s[2] for s in stages)
    print(f"load {load_s:.2f} s; SQL {wall:.2f} s wall, {cpu:.2f} s CPU over {len(stages)} stages "
          f"(what-if graph {'built' if graph_needed else 'skipped'} by diagnose on this trace)")
    heap, heap_after_load = HEAP
    print(f"engine heap: {heap_after_load / 2**20:.1f} MB after the load, +{sum(heap.values()) / 2**20:.1f} MB "
          f"over the stages")
    print(f"{'wall':>8}  {'cpu':>8}  {'cpu%':>5}  {'heap MB':>7}  stage")
    for name, w, c, runs in sorted(stages, key=lambda x: -x[2])[:args.top]:
        print(f"{w:8.2f}  {c:8.2f}  {100 * c / cpu:5.1f}  {heap.get(name, 0) / 2**20:+7.1f}  "
              f"{name}{'' if runs else '  (skipped by diagnose here)'}")
    grew = sorted(((b, n) for n, b in heap.items() if b > 0), reverse=True)
    if grew:
        print("heap grew in: " + ", ".join(f"{n} +{b / 2**20:.1f} MB" for b, n in grew[:8]))
    if args.json:
        args.json.write_text(json.dumps({
            "load_s": load_s, "graph_needed": graph_needed, "wall_s": total_wall, "cpu_s": total_cpu,
            "heap_after_load_bytes": heap_after_load,
            "stages": {n: {"wall_s": w, "cpu_s": c, "diagnose_runs_it": r, "heap_growth_bytes": heap.get(n, 0)}
                       for n, w, c, r in stages}}, indent=1))

if __name__ == "__main__":
    main()
