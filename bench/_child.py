"""Shared bench plumbing: run a Python snippet in a fresh process, get its JSON answer, wall time and peak RSS."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

SHARED = (Path(__file__).resolve().parents[1] / ".." / "shared").resolve()
CORPUS = SHARED / "corpus"
RESULTS = Path(__file__).resolve().parent / "results"
KINETO_PYTHON = sys.executable
HTA_PYTHON = "/work/venv-hta/bin/python"

# name -> list of trace files (a directory set loads every rank)
TRACE_SETS = {
    "sampled_2rank": [CORPUS / "hta_sampled_2rank" / "rank-0.json.gz", CORPUS / "hta_sampled_2rank" / "rank-1.json.gz"],
    "alexnet": [CORPUS / "hta_critical_path_alexnet.json.gz"],
    "trace_diff_control": [CORPUS / "hta_trace_diff_control.json.gz"],
}


def run_child(python: str, code: str, *args: str, timeout: float = 900) -> dict:
    """Runs `python -c code args...`; returns its last stdout line as JSON plus wall_s and peak_rss_mb.

    Peak RSS is the child's own ru_maxrss (os.wait4), or the largest of it and its waited-for children's
    when the child reports `children_rss_kb` (process pools).
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen([python, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    wall = time.perf_counter() - t0
    # communicate() already reaped the child; its rusage is in RUSAGE_CHILDREN only cumulatively, so the
    # child reports its own peak too.
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}): {err[-2000:]}")
    answer = json.loads(out.strip().splitlines()[-1])
    answer["wall_s"] = wall
    rss_kb = max(answer.get("self_rss_kb", 0), answer.get("children_rss_kb", 0))
    answer["peak_rss_mb"] = rss_kb / 1024
    return answer


RSS_SNIPPET = """
import resource as _r, json as _j
def _report(**kw):
    kw['self_rss_kb'] = _r.getrusage(_r.RUSAGE_SELF).ru_maxrss
    kw['children_rss_kb'] = _r.getrusage(_r.RUSAGE_CHILDREN).ru_maxrss
    print(_j.dumps(kw))
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
            os.symlink(f, link)
    return d
