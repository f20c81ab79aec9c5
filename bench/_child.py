"""Shared bench plumbing: run a Python snippet in a fresh process and measure the whole process.

Wall time is the child's whole life (interpreter start, imports, work, exit); peak RSS is the child's
own ru_maxrss from os.wait4, or the largest of its waited-for children's (process pools) when larger.
Sides are run interleaved (A B A B ...) and summarised by the median, so a noisy shared machine
disturbs both sides alike.
"""
from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SHARED = (Path(__file__).resolve().parents[1] / ".." / "shared").resolve()
CORPUS = SHARED / "corpus"
RESULTS = Path(__file__).resolve().parent / "results"
KINETO_PYTHON = sys.executable
HTA_PYTHON_ENV = "KINETO_SQL_HTA_PYTHON"

# name -> list of trace files (a directory set loads every rank)
TRACE_SETS = {
    "sampled_2rank": [CORPUS / "hta_sampled_2rank" / "rank-0.json.gz", CORPUS / "hta_sampled_2rank" / "rank-1.json.gz"],
    "alexnet": [CORPUS / "hta_critical_path_alexnet.json.gz"],
    "trace_diff_control": [CORPUS / "hta_trace_diff_control.json.gz"],
}


def hta_python(given: str | None) -> str:
    """The HTA 0.5.0 venv's python: --hta-python, else $KINETO_SQL_HTA_PYTHON; exits with one sentence
    when neither names an existing file (there is no default: HTA lives in its own venv)."""
    path = given or os.environ.get(HTA_PYTHON_ENV)
    if not path:
        sys.exit(f"HTA needs its own venv: pass --hta-python PATH or set {HTA_PYTHON_ENV} "
                 "(see ../shared/anchors/hta/COMMANDS.md: holistictraceanalysis==0.5.0 with pandas==2.2.3 numpy==1.26.4)")
    if not Path(path).exists():
        sys.exit(f"{path}: no python there; pass --hta-python PATH of the HTA 0.5.0 venv")
    return path


def _descendants(pid: int) -> list[int]:
    """pid and every process below it, from each process's parent in /proc/*/stat (the per-thread
    `children` files can miss a child while it forks or exits)."""
    parent_of = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    # the name field can hold spaces and parentheses: the parent pid follows its last ')'
                    parent_of[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(c for c, parent in parent_of.items() if parent == p)
    return out


def tree_pss_kb(pid: int) -> int:
    """The proportional set size of a process and all its descendants now (Linux; 0 elsewhere): memory
    shared copy-on-write between a parent and its forks counted once, unlike summed RSS."""
    total = 0
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


# `python -c` puts the working directory first on sys.path: run from the checkout, every side would import
# this checkout's kineto_sql, whatever its python (a --before-python side would measure today's code).
_NO_CWD_IMPORTS = "import sys\nif sys.path and sys.path[0] == '':\n    del sys.path[0]\n"


def run_child(python: str, code: str, *args: str, timeout: float = 1800, sample_pss: bool = True) -> dict:
    """Runs `python -c code args...` (imports from its own environment, not the working directory);
    returns its last stdout line as JSON plus the whole-process figures (run_process)."""
    answer, stdout = run_process([python, "-c", _NO_CWD_IMPORTS + code, *args], timeout, sample_pss)
    answer.update(json.loads(stdout.strip().splitlines()[-1]))
    answer["peak_rss_mb"] = max(answer["peak_rss_mb"], answer.get("children_rss_kb", 0) / 1024)
    return answer


def run_command(argv: list[str], timeout: float = 1800, sample_pss: bool = True) -> dict:
    """Runs a command line (kineto-sql itself); returns the whole-process figures (run_process)."""
    return run_process(argv, timeout, sample_pss)[0]


def run_process(argv: list[str], timeout: float, sample_pss: bool = True) -> tuple[dict, str]:
    """wall_s: the process's whole life (interpreter start, imports, work, exit); cpu_s: user + system of
    it and every descendant it waited for; peak_rss_mb: the largest ru_maxrss among them (os.wait4);
    peak_tree_pss_mb (`sample_pss`): the largest total PSS of the process tree, sampled every 50 ms (what
    the tree held at once, shared pages counted once). Without sampling, this process sleeps in wait4
    until the child ends, so the wall time is exact and nothing else takes a core from it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        if sample_pss:
            status, usage, peak_pss = _wait_sampling(proc, t0 + timeout)
        else:
            killer = threading.Timer(timeout, proc.kill)
            killer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                killer.cancel()
            peak_pss = None
        wall = time.perf_counter() - t0
        if wall >= timeout:
            raise RuntimeError(f"child ran past {timeout} s")
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}): {stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024,
            "peak_tree_pss_mb": None if peak_pss is None else peak_pss / 1024}, stdout


def _wait_sampling(proc, deadline: float) -> tuple[int, object, int]:
    """Waits for `proc`, sampling its tree's PSS every 50 ms: (wait status, rusage, peak PSS kB)."""
    peak_pss, next_sample = 0, time.perf_counter()
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return status, usage, peak_pss
        now = time.perf_counter()
        if now > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            return status, usage, peak_pss  # (the caller sees the time and says so)
        if now >= next_sample:
            peak_pss = max(peak_pss, tree_pss_kb(proc.pid))
            next_sample = now + 0.05
        time.sleep(0.01)


def compile_checkout() -> None:
    """Writes this checkout's bytecode, as `pip install` does for an installed package. An editable
    checkout run with PYTHONDONTWRITEBYTECODE set (this project's machines set it) would otherwise compile
    its modules again in every measured process, which no installed copy (nor HTA's) does."""
    root = Path(__file__).resolve().parents[1]
    for package in ("kineto_sql", "cli"):
        compileall.compile_dir(root / package, quiet=1)


def compile_other(python: str) -> None:
    """compile_checkout for another checkout's venv (a baseline side): its package is found by importing it
    with its own interpreter. Without it a baseline checkout that never wrote its bytecode pays about 0.08 s
    of CPU a process for compiling its imports (measured on tl_torch_compile_triton: 0.46 vs 0.38 s of
    import), which reads as a difference between the two checkouts."""
    code = ("import compileall, pathlib, kineto_sql; root = pathlib.Path(kineto_sql.__file__).parents[1]; "
            "[compileall.compile_dir(root / p, quiet=1) for p in ('kineto_sql', 'cli') if (root / p).is_dir()]")
    subprocess.run([python, "-c", code], check=True)


# Rounds that sample the process tree's PSS, after the timed ones. A sample reads /proc/*/smaps_rollup of
# every process of the tree, ~7 ms of CPU each (235 ms during a 1.3 s two-process load of
# hta_trace_diff_control, measured): on a 2-core machine a two-process side pays that in wall time and a
# one-process side does not, so time is never taken in a round that samples.
MEMORY_ROUNDS = 2


def interleaved(runs: dict[str, tuple], repeat: int, memory_rounds: int = MEMORY_ROUNDS) -> dict[str, list[dict]]:
    """runs: side -> (python, code, *args) for a snippet, or ("command", argv) for a command line. Runs
    every side once per round (in a rotated order), `repeat` timed rounds, then `memory_rounds` (at most
    `repeat`) that sample the tree's PSS; each timed row gets their median peak_tree_pss_mb (this
    checkout's bytecode is written first)."""
    compile_checkout()

    def run(python, code, *args, sample_pss):
        if python == "command":
            return run_command(code, sample_pss=sample_pss)
        return run_child(python, code, *args, sample_pss=sample_pss)

    results: dict[str, list[dict]] = {side: [] for side in runs}
    for round_number in range(repeat):
        for side in _rotated(list(runs), round_number):
            results[side].append(run(*runs[side], sample_pss=False))
    sampled: dict[str, list[float]] = {side: [] for side in runs}
    for round_number in range(min(memory_rounds, repeat)):
        for side in _rotated(list(runs), round_number):
            sampled[side].append(run(*runs[side], sample_pss=True)["peak_tree_pss_mb"])
    for side, rows in results.items():
        for row in rows:
            row["peak_tree_pss_mb"] = statistics.median(sampled[side]) if sampled[side] else None
    return results


def _rotated(sides: list[str], round_number: int) -> list[str]:
    """The sides in the order of this round: each round starts one side later, so that no side always
    follows the same one, and what a process leaves behind (memory it freed, the page cache it filled)
    weighs on every side alike."""
    start = round_number % len(sides)
    return sides[start:] + sides[:start]


def median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


RSS_SNIPPET = """
import resource as _r, json as _j
def _report(**kw):
    kw['children_rss_kb'] = _r.getrusage(_r.RUSAGE_CHILDREN).ru_maxrss
    print(_j.dumps(kw))
"""

# What the console script does first (kineto_sql.cli.launch): the trace (the snippet's one argument) starts
# being prepared in a child process before the heavy imports, so they overlap; `t0` is taken before it.
EARLY_START = """
import sys, time
t0 = time.perf_counter()
from kineto_sql.loading import background
if len(sys.argv) == 2:
    background.start_early(__import__('pathlib').Path(sys.argv[1]))
"""


def json_mb(path: Path) -> float:
    import gzip

    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return len(data) / 1e6


def write_results(name: str, rows) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(rows, indent=1, default=str))
    return path


def markdown(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """columns: (key, header, format spec)."""
    lines = ["| " + " | ".join(h for _, h, _ in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for key, _h, spec in columns:
            v = row.get(key)
            cells.append("" if v is None else format(v, spec) if spec else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def hta_dir_for(files: list[Path], tmp: Path) -> Path:
    """HTA loads every trace in a directory: give it one holding just these files (symlinks)."""
    d = tmp / "_".join(f.name.split(".")[0] for f in files)
    d.mkdir(parents=True, exist_ok=True)
    for f in files:
        link = d / f.name
        if not link.exists():
            os.symlink(f.resolve(), link)
    return d


# HTA 0.5.0's load + four analyses, and the same four as kineto-sql SQL (hta_compat), over the trace
# files or directory given as arguments: the two sides every HTA comparison times.
HTA_FOUR = RSS_SNIPPET + """
import sys, time, logging, warnings
logging.disable(logging.WARNING); warnings.simplefilter('ignore')
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter(); a = TraceAnalysis(trace_dir=sys.argv[1]); t1 = time.perf_counter()
ranks = sorted(a.t.traces.keys())
a.get_temporal_breakdown(visualize=False)
a.get_comm_comp_overlap(visualize=False)
a.get_idle_time_breakdown(ranks=ranks, visualize=False, show_idle_interval_stats=True)
a.get_gpu_kernel_breakdown(visualize=False)
t2 = time.perf_counter()
_report(load_s=t1 - t0, analyses_s=t2 - t1)
"""

# kineto-sql's side loads as its CLI does on this machine (query_pool.default_jobs: the trace prepared in a
# child process on 2+ cores, started before the heavy imports as the console script does) and runs the
# five queries in this process (in two they took as long: the event set they share is most of the work).
KINETO_HTA_FOUR = RSS_SNIPPET + EARLY_START + """
from kineto_sql import open_trace
from kineto_sql.run.pool import default_jobs
from kineto_sql.run.runner import run_query
load = analyses = 0.0
for path in sys.argv[1:]:
    tp = open_trace(path, jobs=default_jobs()); t1 = time.perf_counter()
    for q in ('hta.temporal_breakdown', 'hta.comm_comp_overlap', 'hta.idle_time_breakdown',
              'hta.kernel_type_breakdown', 'hta.kernel_breakdown'):
        run_query(tp, q, {'hta_compat': True})
    t2 = time.perf_counter(); tp.close()
    load += t1 - t0; analyses += t2 - t1; t0 = time.perf_counter()
_report(load_s=load, analyses_s=analyses)
"""
