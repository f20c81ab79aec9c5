"""Two installs' CLI load, A/B: bench_load.py's own sides (the 2-process load of each install, the bare engine),
interleaved, without its HTA and in-process sides (which need an HTA venv and double the time).

    python bench/ab_load.py --old /work/main/.venv/bin/python --trace T.json.gz [--sizes 1 4] [--repeat 3]
    python bench/ab_load.py --old OLD/python --side main=MAIN/python --no-bare --trace T.json.gz   # three installs

Per trace (T itself, then its compact rewrite replicated each of --sizes times): medians of whole-process wall
and CPU seconds (user + system of the process tree) and of the tree's peak PSS (--memory-rounds sampled rounds
per side), and the new/old ratios; one JSON line per trace.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import KINETO_PYTHON, interleaved, json_mb  # noqa: E402
from bench_load import BARE_LOAD, KINETO_LOAD_2  # noqa: E402
from replicate import _read, replicate, write  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--new", default=KINETO_PYTHON)
    ap.add_argument("--old", required=True, help="the python of a venv with the other install")
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 4])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--side", action="append", default=[], metavar="NAME=PYTHON",
                    help="one more side, the python of another venv (e.g. main=/work/main/.venv/bin/python); "
                         "reported with its NAME/old ratios")
    ap.add_argument("--no-bare", action="store_true", help="leave out the bare engine's side")
    ap.add_argument("--memory-rounds", type=int, default=1,
                    help="rounds that sample the tree's PSS (after the timed ones; the median is reported)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kineto_ab_load_") as tmp:
        files = [("original", args.trace)]
        source = _read(args.trace)
        for n in args.sizes:
            path = Path(tmp) / f"x{n}.json"
            write(replicate(source, n), path)
            files.append((f"{n}x compact", path))
        for label, f in files:
            sides = {"new": (args.new, KINETO_LOAD_2, str(f)), "old": (args.old, KINETO_LOAD_2, str(f))}
            for name, python in (side.split("=", 1) for side in args.side):
                sides[name] = (python, KINETO_LOAD_2, str(f))
            if not args.no_bare:
                sides["bare"] = (args.new, BARE_LOAD, str(f))
            runs = interleaved(sides, args.repeat, memory_rounds=args.memory_rounds)
            row = {"trace": label, "json_mb": round(json_mb(f), 1)}
            for side, rows in runs.items():
                for key in ("wall_s", "cpu_s", "peak_tree_pss_mb"):
                    values = [r[key] for r in rows if r.get(key) is not None]
                    row[f"{side}_{key}"] = round(statistics.median(values), 3) if values else None
                row[f"{side}_walls"] = [round(r["wall_s"], 2) for r in rows]
                row[f"{side}_cpus"] = [round(r["cpu_s"], 2) for r in rows]
            for side in sides:
                if side not in ("old", "bare"):
                    for key in ("wall_s", "cpu_s", "peak_tree_pss_mb"):
                        row[f"{side}/old {key}"] = round(row[f"{side}_{key}"] / row[f"old_{key}"], 3)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
