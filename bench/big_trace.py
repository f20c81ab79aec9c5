"""The large-trace figures: a corpus trace replicated to several GB of JSON, then `kineto-sql info` and
`kineto-sql diagnose` on it, each under /usr/bin/time and measured as a process tree.

The replica (bench/replicate.py's copies, one copy in memory at a time, written with orjson for speed)
is uncompressed JSON under --tmp and deleted at the end. For each command: wall, user and system seconds
and the largest process's max RSS (/usr/bin/time -f "%e %U %S %M"), the tree's peak PSS (sampled every
250 ms), the exit code and the last line on stderr (the refusal, if the loader refuses it up front).

    nice -n 5 python bench/big_trace.py [--copies 143] [--trace CORPUS_FILE] [--tmp /tmp]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import CORPUS, markdown, write_results  # noqa: E402
from memory_model import KINETO_SQL, measure  # noqa: E402
from replicate import _read, replicated_events  # noqa: E402


def write_fast(trace: dict, copies: int, path: Path) -> None:
    head = {key: value for key, value in trace.items() if key != "traceEvents"}
    with open(path, "wb") as out:
        text = orjson.dumps(head)
        out.write(text[:-1] + (b"," if head else b"") + b'"traceEvents":[')
        first = True
        for part in replicated_events(trace, copies):
            if part:
                out.write((b"" if first else b",") + orjson.dumps(part)[1:-1])
                first = False
        out.write(b"]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, default=CORPUS / "hta_trace_diff_control.json.gz")
    ap.add_argument("--copies", type=int, default=143)
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("--commands", nargs="*", default=["info", "diagnose"])
    ap.add_argument("--name", default="big_trace")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kineto_big_", dir=args.tmp) as tmp:
        path = Path(tmp) / f"{args.trace.name.split('.')[0]}_x{args.copies}.json"
        started = time.perf_counter()
        write_fast(_read(args.trace), args.copies, path)
        print(f"wrote {path.stat().st_size / 1e9:.2f} GB in {time.perf_counter() - started:.0f} s", flush=True)
        extra = {"info": ["--format", "json"], "diagnose": ["--format", "json", "-o", str(Path(tmp) / "report.json")]}
        for command in args.commands:
            timing = Path(tmp) / "time.txt"
            got = measure(["/usr/bin/time", "-o", str(timing), "-f", "%e %U %S %M", KINETO_SQL, command, str(path),
                           *extra[command]], check=False, period=0.25)
            wall, user, system, max_rss = timing.read_text().split()[-4:]
            lines = [line for line in got["stderr"].splitlines() if line and not line.startswith("kineto-sql: [")]
            rows.append({"command": command, "json_gb": path.stat().st_size / 1e9, "wall_s": float(wall),
                         "user_s": float(user), "sys_s": float(system), "max_rss_mb": int(max_rss) / 1024,
                         "peak_tree_mb": got["peak_tree_mb"], "exit": got["exit"],
                         "said": lines[-1] if lines else ""})
            print(rows[-1], flush=True)
    print(markdown(rows, [("command", "command", "s"), ("json_gb", "JSON GB", ".2f"), ("wall_s", "wall s", ".1f"),
                          ("user_s", "user s", ".1f"), ("sys_s", "sys s", ".1f"),
                          ("max_rss_mb", "largest process max RSS MB", ".0f"),
                          ("peak_tree_mb", "tree peak PSS MB", ".0f"), ("exit", "exit", ""), ("said", "last line", "s")]))
    print("results:", write_results(args.name, rows))


if __name__ == "__main__":
    main()
