"""Fleet fan-out: 32 and 128 ranks (dlrm_8rank replicated, kineto_sql.fleet.replicate), read by
`run_fleet` with local --jobs 1, local --jobs 2, and a dask.distributed cluster of 2 worker processes
(started beforehand, outside the driver, as a real cluster would be). Each run is a fresh driver process
writing a fresh Parquet dataset; we report its wall time and the DRIVER's own peak RSS (ru_maxrss of the
driver process alone, not of its workers), which must stay flat as the ranks grow: the driver holds only
the small tables, never a trace.

    nice python bench/bench_fleet.py [--sizes 32 128] [--parts hta,collectives]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = (Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus").resolve()

DRIVER = """
import json, resource, sys, time
from kineto_sql.fleet.executors import DaskExecutor, LocalExecutor
from kineto_sql.fleet.run import run_fleet
target, out, mode, arg, parts, recycle = sys.argv[1:7]
executor = DaskExecutor(arg) if mode == 'dask' else LocalExecutor(int(arg), int(recycle) or None)
t0 = time.perf_counter()
run = run_fleet(target, tuple(parts.split(',')), executor, out)
wall = time.perf_counter() - t0
print(json.dumps({'run_s': wall, 'ranks': len(run.report.ranks), 'failed': len(run.failures),
                  'straggler': run.report.verdict.straggler,
                  'driver_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  'workers_rss_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def run_driver(target: Path, out: Path, mode: str, arg: str, parts: str, recycle: int) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(target), str(out), mode, arg, parts, str(recycle)],
                          capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--parts", default="hta,collectives")
    parser.add_argument("--executors", nargs="+", default=["local1", "local2", "dask"],
                        choices=["local1", "local2", "dask"])
    parser.add_argument("--tasks-per-worker", type=int, default=0,
                        help="local workers replaced after this many ranks (0: never; the fleet CLI uses 16)")
    args = parser.parse_args()
    from distributed import LocalCluster

    from kineto_sql.fleet.replicate import replicate_ranks

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=None, memory_limit=0) as cluster:
        for size in args.sizes:
            target = Path(tmp) / f"ranks{size}"
            replicate_ranks(CORPUS / "dlrm_8rank", size // 8, target)
            mb = sum(p.stat().st_size for p in target.iterdir()) / 1e6
            for key, label, mode, arg in (("local1", "local --jobs 1", "local", "1"),
                                          ("local2", "local --jobs 2", "local", "2"),
                                          ("dask", "dask, 2 workers", "dask", cluster.scheduler_address)):
                if key not in args.executors:
                    continue
                out = Path(tmp) / f"out{size}-{mode}-{len(rows)}"
                r = run_driver(target, out, mode, arg, args.parts, args.tasks_per_worker)
                r.update(size=size, executor=label, gz_mb=round(mb, 1))
                rows.append(r)
                print(json.dumps(r), flush=True)
    print()
    print(f"parts: {args.parts}")
    print(f"tasks per local worker: {args.tasks_per_worker or 'unlimited'}")
    print("| ranks | gz MB | executor | wall s | s / rank | driver peak RSS MB | largest local worker MB | straggler |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        worker = f"{r['workers_rss_mb']:.0f}" if r["executor"].startswith("local") else "(cluster)"
        print(f"| {r['size']} | {r['gz_mb']} | {r['executor']} | {r['wall_s']:.1f} | {r['wall_s'] / r['size']:.2f} "
              f"| {r['driver_rss_mb']:.0f} | {worker} | {r['straggler']} |")


if __name__ == "__main__":
    main()
