"""Where the CLI's two-process load of one trace spends its time, stage by stage, and the engine's own cost.

The loader's overhead over a bare ingest (bench_load.py) is decided before the engine gets its first
byte: after that the load runs at the engine's speed. This runs the load as the console script does
(the child started before the imports, open_trace jobs=2) in fresh processes, `--repeat` times, and
prints the median time from process start at which each stage ends, in the process that runs it: the
child's fork, its parse and each fix, the parent's imports and engine start, the first and last piece the
engine gets, the load done. Then the engine alone, started and fed the trace in 8 MB pieces, the file's
own text and the prepared text: its feed (tokenizing) and its end-of-file pass (sort, parse, args).

    python bench/profile_load.py TRACE [--repeat 7] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import compile_checkout  # noqa: E402

# Run in a fresh process: argv[1] the trace, argv[2] the file each stage's end is appended to, from either
# process (the clock is the same monotonic one; the child inherits T0 with the fork).
TIMELINE = r"""
import functools, json, os, sys, time
T0 = time.perf_counter()
OUT, MAIN = open(sys.argv[2], "a", buffering=1), os.getpid()

def stamp(stage):
    side = "engine's process" if os.getpid() == MAIN else "loader child"
    OUT.write(json.dumps([stage, side, 1000 * (time.perf_counter() - T0)]) + "\n")

from pathlib import Path
from kineto_sql.loading import background, prepare

def ends(owner, name, stage):
    real = getattr(owner, name)
    @functools.wraps(real)
    def stamped(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        finally:
            stamp(stage)
    setattr(owner, name, stamped)

for name, stage in (("decode_trace", "decoded"), ("rebase", "rebased"), ("validate_and_survey", "validated"),
                    ("remap_ids", "ids remapped"), ("split_tid_zero", "tid 0 split"),
                    ("split_overlaps", "overlaps split"), ("bind_flows", "flows bound"), ("fix_args", "args fixed")):
    ends(prepare, name, stage)
stamp("loader child forks")
background.start_early(Path(sys.argv[1]))
from kineto_sql import open_trace
from kineto_sql.engine import processor
stamp("imports done")
ends(processor.KinetoTraceProcessor, "__init__", "engine started")
real_chunks = background.StreamedPrepared.chunks

def chunks(self):
    first = True
    for chunk in real_chunks(self):
        if first:
            stamp("first piece received")
            first = False
        yield chunk
    stamp("last piece received")

background.StreamedPrepared.chunks = chunks
tp = open_trace(sys.argv[1], jobs=2)
stamp("load done")
"""

ENGINE_ALONE = r"""
import gzip, json, sys, time
from pathlib import Path
from kineto_sql.engine.processor import EngineChoice, KinetoTraceProcessor
from kineto_sql.loading.prepare import prepare_path
from kineto_sql.sql.package import package_dir, package_modules
path = Path(sys.argv[1])
raw = path.read_bytes()
raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
texts = {"the file's text": raw, "the prepared text": b"".join(prepare_path(path).chunks())}
out = {}
for label, data in texts.items():
    tp = KinetoTraceProcessor(EngineChoice().resolve(len(data)), sql_package=("kineto", package_modules()),
                              sql_package_dir=package_dir())
    backend = tp._backend
    t0 = time.perf_counter()
    for start in range(0, len(data), 8 << 20):
        backend.parse(data[start:start + (8 << 20)])
    t1 = time.perf_counter()
    backend.notify_eof()
    out[label] = {"MB": len(data) / 1e6, "feed_ms": 1000 * (t1 - t0), "eof_ms": 1000 * (time.perf_counter() - t1)}
    tp.close()
print(json.dumps(out))
"""


def timeline(trace: Path, repeat: int) -> list[dict]:
    rounds = []
    for _ in range(repeat):
        with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as log:
            subprocess.run([sys.executable, "-c", TIMELINE, str(trace), log.name], check=True)
            rounds.append([json.loads(line) for line in Path(log.name).read_text().splitlines()])
    order = [(stage, side) for stage, side, _ in rounds[0]]
    return [{"stage": stage, "process": side,
             "ms": statistics.median(at for r in rounds for s, p, at in r if (s, p) == (stage, side))}
            for stage, side in order]


def engine_alone(trace: Path, repeat: int) -> dict:
    runs = [json.loads(subprocess.run([sys.executable, "-c", ENGINE_ALONE, str(trace)], check=True,
                                      capture_output=True, text=True).stdout) for _ in range(repeat)]
    return {label: {key: statistics.median(r[label][key] for r in runs) for key in runs[0][label]}
            for label in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--repeat", type=int, default=7, help="fresh-process runs (medians reported)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    compile_checkout()
    stages = sorted(timeline(args.trace, args.repeat), key=lambda row: row["ms"])
    engine = engine_alone(args.trace, max(args.repeat // 2, 1))
    print(f"{args.trace.name}: the CLI's two-process load, medians of {args.repeat} fresh processes")
    print("| stage ends | process | ms from start |\n|---|---|---|")
    for row in stages:
        print(f"| {row['stage']} | {row['process']} | {row['ms']:.0f} |")
    print("\nThe engine alone, fed in 8 MB pieces:\n| text | MB | feed ms | end of file ms |\n|---|---|---|---|")
    for label, row in engine.items():
        print(f"| {label} | {row['MB']:.1f} | {row['feed_ms']:.0f} | {row['eof_ms']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps({"timeline": stages, "engine_alone": engine}, indent=1))


if __name__ == "__main__":
    main()
