"""The basis of the loader's memory model (kineto_sql/engine/memory.py): the peak memory of a load per MB
of JSON, measured on real traces at several lengths.

Each case runs a load as a user does, in a fresh process tree, and samples every process of the tree
(/proc/PID/smaps_rollup, every 100 ms): the peak of the tree's total PSS (what a cgroup is charged: pages
shared copy-on-write between the loader's processes counted once) and the peak of each process. The factor
is (peak - base) / JSON bytes, base being the peak of the same command on a one-event trace (interpreter,
imports, an empty engine): what the load adds per byte of JSON.

Cases: `info` (two processes on 2+ cores: a child decodes and prepares, this one holds the engine) and
`one` (open_trace(jobs=1): decode, prepare and engine in one process); traces: the corpus file as saved
(indented JSON, gzip), its inflated copy, compact replicas (bench/replicate.py: 1x/4x/8x), a
with_stack-heavy trace. Replicas go to a temporary directory.

    nice -n 5 python bench/memory_model.py [--sizes 1 4 8] [--name memory_model]
"""
from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child import CORPUS, KINETO_PYTHON, _descendants, markdown, write_results  # noqa: E402
from replicate import _read, replicate, write  # noqa: E402

KINETO_SQL = str(Path(KINETO_PYTHON).parent / "kineto-sql")
ONE_PROCESS = "import sys; from kineto_sql import open_trace; open_trace(sys.argv[1], jobs=1).close()"


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(argv: list[str], timeout: float = 3600, period: float = 0.1, env=None, check: bool = True) -> dict:
    """Runs argv; the tree's peak PSS, the two largest processes' peak PSS, wall and CPU seconds, the exit
    code and stderr (`check`: a non-zero exit raises)."""
    t0 = time.perf_counter()
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
    peak_tree, per_pid = 0, {}
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > timeout:
            proc.kill()
        sizes = {p: _pss_kb(p) for p in _descendants(proc.pid)}
        total = sum(sizes.values())
        peak_tree = max(peak_tree, total)
        for p, kb in sizes.items():
            per_pid[p] = max(per_pid.get(p, 0), kb)
        time.sleep(period)
    err.seek(0)
    stderr = err.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if check and code != 0:
        raise RuntimeError(f"{argv}: exit {code}: {stderr[-1500:]}")
    peaks = sorted(per_pid.values(), reverse=True)
    return {"wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_tree_mb": peak_tree / 1024, "largest_process_mb": peaks[0] / 1024 if peaks else 0,
            "second_process_mb": peaks[1] / 1024 if len(peaks) > 1 else 0, "exit": code, "stderr": stderr}


def _json_bytes(path: Path) -> int:
    data = path.read_bytes()
    return len(gzip.decompress(data)) if data[:2] == b"\x1f\x8b" else len(data)


def cases(tmp: Path, sizes: list[int]) -> list[tuple[str, Path]]:
    control = CORPUS / "hta_trace_diff_control.json.gz"
    stack = CORPUS / "tl_h100_owlv2_large.json.gz"
    plain = tmp / "control_indented.json"
    plain.write_bytes(gzip.decompress(control.read_bytes()))
    out = [("control, indented, gzip (as saved)", control), ("control, indented JSON", plain)]
    source = _read(control)
    for n in sizes:
        path = tmp / f"control_x{n}.json"
        write(replicate(source, n), path)
        out.append((f"control x{n}, compact JSON", path))
    gz = tmp / f"control_x{sizes[-1]}.json.gz"
    gz.write_bytes(gzip.compress((tmp / f"control_x{sizes[-1]}.json").read_bytes(), compresslevel=1))
    out.append((f"control x{sizes[-1]}, compact, gzip", gz))
    out.append(("owlv2 (with_stack, all flags), gzip (as saved)", stack))
    stack_source = _read(stack)
    for n in sizes[1:2]:
        path = tmp / f"owlv2_x{n}.json"
        write(replicate(stack_source, n), path)
        out.append((f"owlv2 x{n}, compact JSON", path))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 4, 8])
    ap.add_argument("--modes", nargs="*", default=["info", "one"])
    ap.add_argument("--name", default="memory_model")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kineto_memory_model_") as tmp:
        tmp = Path(tmp)
        baseline = tmp / "tiny.json"
        baseline.write_text('{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]}')
        argv = {"info": lambda p: [KINETO_SQL, "info", str(p), "--format", "json"],
                "one": lambda p: [KINETO_PYTHON, "-c", ONE_PROCESS, str(p)]}
        base = {mode: measure(argv[mode](baseline))["peak_tree_mb"] for mode in args.modes}
        for label, path in cases(tmp, args.sizes):
            mb = _json_bytes(path) / 1e6
            for mode in args.modes:
                got = measure(argv[mode](path))
                got.pop("stderr")
                row = {"trace": label, "mode": mode, "json_mb": round(mb, 1), **got,
                       "base_mb": base[mode], "per_json_mb": (got["peak_tree_mb"] - base[mode]) / mb}
                rows.append(row)
                print(f"{label:48s} {mode:4s} {mb:7.1f} MB JSON: tree peak {got['peak_tree_mb']:7.0f} MB "
                      f"(+{row['per_json_mb']:.2f}x), largest {got['largest_process_mb']:.0f} MB, "
                      f"{got['wall_s']} s wall, {got['cpu_s']} s CPU", flush=True)
    print(markdown(rows, [("trace", "trace", "s"), ("mode", "mode", "s"), ("json_mb", "JSON MB", ".1f"),
                          ("peak_tree_mb", "tree peak MB", ".0f"), ("per_json_mb", "(peak-base)/JSON", ".2f"),
                          ("largest_process_mb", "largest process MB", ".0f"),
                          ("second_process_mb", "2nd process MB", ".0f"),
                          ("wall_s", "wall s", ".1f"), ("cpu_s", "CPU s", ".1f")]))
    print("results:", write_results(args.name, rows))


if __name__ == "__main__":
    main()
