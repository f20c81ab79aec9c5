"""Gzip bombs at realistic size: how early, how fast and at what memory the loader refuses each.

Each bomb (tests/gzip_bombs.py: one huge event list, whitespace, one long string, repeated gzip members,
deeply nested args) is a valid gzip file of a few MB that inflates to `--gib` GiB (default 20) of JSON,
built without holding or writing the inflated text.

Each is loaded by `kineto-sql info` as a user runs it, under the memory limit given (--limit-gib, the
KINETO_SQL_MEMORY_LIMIT setting: what a cgroup limit does; 0: none, the machine's available memory), and
measured as a process tree (bench/memory_model.measure). Recorded: the inflated bytes when refused (the
sentence says them), seconds, CPU, peak PSS of the tree, the exit code and the sentence. Bombs are built
in a temporary directory and deleted.

    nice -n 5 python bench/bombs.py [--gib 20] [--limit-gib 8] [--kinds events whitespace ...]
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _child import markdown, write_results  # noqa: E402
from memory_model import KINETO_SQL, measure  # noqa: E402

from tests.gzip_bombs import KINDS, build  # noqa: E402

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=20.0)
    ap.add_argument("--limit-gib", type=float, default=8.0, help="KINETO_SQL_MEMORY_LIMIT for the load (0: none)")
    ap.add_argument("--kinds", nargs="*", default=list(KINDS))
    ap.add_argument("--name", default="bombs")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.limit_gib:
        env["KINETO_SQL_MEMORY_LIMIT"] = f"{args.limit_gib}G"
    rows = []
    with tempfile.TemporaryDirectory(prefix="kineto_bombs_") as tmp:
        for kind in args.kinds:
            path = Path(tmp) / f"{kind}.json.gz"
            inflated = build(kind, int(args.gib * 1024), path)
            got = measure([KINETO_SQL, "info", str(path)], env=env, check=False)
            lines = [line for line in got["stderr"].splitlines() if not line.startswith("kineto-sql: [")]
            sentence = lines[-1] if lines else ""
            said = re.search(r"\(([\d.]+) (MB|GB) of JSON\)", sentence)
            refused_at = (float(said.group(1)) * (1e3 if said.group(2) == "GB" else 1)) if said else None
            rows.append({"kind": kind, "gz_mb": path.stat().st_size / 1e6, "inflates_gb": inflated / 1e9,
                         "refused_at_mb": refused_at, "wall_s": got["wall_s"], "cpu_s": got["cpu_s"],
                         "peak_tree_mb": got["peak_tree_mb"], "exit": got["exit"], "sentence": sentence})
            print(rows[-1], flush=True)
            path.unlink()
    print(markdown(rows, [("kind", "bomb", "s"), ("gz_mb", "gzip MB", ".1f"), ("inflates_gb", "inflates to GB", ".1f"),
                          ("refused_at_mb", "refused at MB inflated", ".0f"), ("wall_s", "wall s", ".1f"),
                          ("cpu_s", "CPU s", ".1f"), ("peak_tree_mb", "peak tree MB", ".0f"), ("exit", "exit", ""),
                          ("sentence", "sentence", "s")]))
    print("results:", write_results(args.name, rows))


if __name__ == "__main__":
    main()
