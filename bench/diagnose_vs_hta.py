"""`kineto-sql diagnose TRACE` against HTA 0.5.0's load + four analyses, per trace: whole processes, wall and
CPU seconds of the process tree, interleaved rounds, medians, and the median of each round's own ratio (the
two sides of a round ran under the same load: on a shared machine that ratio is the figure to read).

    python bench/diagnose_vs_hta.py --hta-python /work/hta-venv/bin/python TRACE... [--repeat 3]
                                    [--baseline-python OTHER_CHECKOUT/.venv/bin/python]

--baseline-python adds a second diagnose (another checkout's venv, e.g. main's) to the same rounds: a
before/after pair measured under the same load, each side with its own ratio to HTA.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import HTA_FOUR, KINETO_PYTHON, compile_other, hta_dir_for, hta_python, interleaved  # noqa: E402
from bench_scale import diagnose_command  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", type=Path, nargs="+")
    ap.add_argument("--hta-python", help="python of the HTA 0.5.0 venv (or $KINETO_SQL_HTA_PYTHON)")
    ap.add_argument("--kineto-python", default=KINETO_PYTHON)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-python", help="a second diagnose (another checkout's venv) in the same rounds")
    args = ap.parse_args()
    hta = hta_python(args.hta_python)
    if args.baseline_python:
        compile_other(args.baseline_python)
    print("| trace | diagnose | diagnose wall s | diagnose CPU s | HTA wall s | HTA CPU s | wall ratio | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="kineto_vs_hta_") as tmp:
        for trace in args.traces:
            if not trace.exists():
                sys.exit(f"{trace}: no such trace")
            sides = {"diagnose": diagnose_command(args.kineto_python, trace)}
            if args.baseline_python:
                sides["baseline"] = diagnose_command(args.baseline_python, trace)
            runs = interleaved({**sides, "hta": (hta, HTA_FOUR, str(hta_dir_for([trace], Path(tmp))))},
                               args.repeat, memory_rounds=0)
            h = runs["hta"]
            for side in sides:
                d = runs[side]
                med = {(who, key): statistics.median(r[key] for r in rows)
                       for who, rows in ((side, d), ("hta", h)) for key in ("wall_s", "cpu_s")}
                ratio = {key: statistics.median(a[key] / b[key] for a, b in zip(d, h)) for key in ("wall_s", "cpu_s")}
                label = "this checkout" if side == "diagnose" else f"baseline ({args.baseline_python})"
                print(f"| {trace.name} | {label} | {med[side, 'wall_s']:.2f} | {med[side, 'cpu_s']:.2f} | "
                      f"{med['hta', 'wall_s']:.2f} | {med['hta', 'cpu_s']:.2f} | {ratio['wall_s']:.2f} | "
                      f"{ratio['cpu_s']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
