"""The HTML report's sections, from a hand-built Diagnosis (no engine): header, capture warning, loading and
loss, per-step table, rules named, failed ranks, and the findings chart scaled to the step."""
from __future__ import annotations

import json
import re

from kineto_sql import __version__
from kineto_sql.diagnose.model import (Diagnosis, Finding, LedgerBucket, LedgerWindow, Skipped, StepRow,
                                       TraceDiagnosis, Verdict, Where)
from kineto_sql.diagnose.render_html import render_html

WHERE = Where((1,), 0, 10, (), ())


def _finding(query_id, impact_ns, pct, severity="low", evidence=("e",)):
    return Finding(query_id, f"{query_id}@1", f"title {query_id}", "row", severity, 1, impact_ns, pct, evidence,
                   "", "", "", WHERE, (f"kineto-sql run {query_id} t.json",))


def _trace(findings=(), loss=(), devices=("0: NVIDIA H100 80GB HBM3, 79 GB",)):
    steps = (StepRow(1, 400_000_000, 300_000_000, 200_000_000, 50.0), StepRow(2, 380_000_000, None, None, None))
    verdict = Verdict(2, 390_000_000, 780_000_000, 50.0, "mixed", "the GPU is busy 50%", True, steps)
    return TraceDiagnosis("t.json", None, verdict, tuple(findings), ("catalog.gc_gil_stall", "catalog.input_bound"),
                          (Skipped("catalog.straggler_rank", "needs distributed"),), ("overlap_lane: 3",),
                          loss=tuple(loss), engine="wasm", devices=devices)


def _shares(html: str) -> list[float]:
    """The findings chart's bars: their data-pct, top to bottom."""
    chart = html[html.index("<svg class='chart shares'"):]
    chart = chart[:chart.index("</svg>")]
    return [float(x) for x in re.findall(r"data-pct='([^']+)'", chart)]


def ledger_bars(html: str) -> dict[str, dict[str, int]]:
    """The ledger chart's bars: {window label: {bucket: ns}} (the first chart of class ledger)."""
    figure = html[html.index("<figure class='ledger'>"):]
    figure = figure[:figure.index("</figure>")]
    out = {}
    for label, body in re.findall(r"<g data-column='([^']+)'[^>]*>(.*?)</g>", figure, flags=re.S):
        out[label] = {b: int(ns) for b, ns in re.findall(r"data-bucket='([^']+)' data-ns='(\d+)'", body)}
    return out


def test_header_loading_steps_and_rules():
    html = render_html(Diagnosis("t.json", (_trace([_finding("catalog.a", 100_000, 0.01)]),)))
    header = html[html.index("id='report-header'"):html.index("</table>", html.index("id='report-header'"))]
    assert "<th>trace</th><td>t.json</td>" in header and "NVIDIA H100 80GB HBM3" in header
    assert f"<th>kineto-sql</th><td>{__version__}, engine wasm</td>" in header
    assert re.search(r"<th>date</th><td>\d{4}-\d\d-\d\d \d\d:\d\d UTC</td>", header)
    assert "nothing lost" in html and "<li>overlap_lane: 3</li>" in html
    assert "<tr><td>1</td><td>400.0 ms</td><td>300.0 ms</td><td>200.0 ms</td><td>50%</td></tr>" in html
    assert "<tr><td>2</td><td>380.0 ms</td><td>n/a</td><td>n/a</td><td>n/a</td></tr>" in html
    assert "<code>catalog.gc_gil_stall</code>, <code>catalog.input_bound</code>" in html
    assert "<code>catalog.straggler_rank</code>: needs distributed" in html


def test_a_small_finding_is_a_sliver_on_the_step_axis():
    """0.1 ms of a 780 ms profile: 0.01% on a 0-100% axis, not a full-width bar."""
    html = render_html(Diagnosis("t.json", (_trace([_finding("catalog.a", 100_000, 0.01),
                                                   _finding("catalog.b", 300_000_000, 38.5, "high")]),)))
    assert _shares(html) == [0.01, 38.5]
    chart = html[html.index("<svg class='chart shares'"):]
    width = [float(w) for w in re.findall(r"<rect x='300' y='[^']+' width='([^']+)'", chart)]
    plot = 720 - 300 - 60  # the axis' width: 100% of the profile
    assert width == [round(0.01 / 100 * plot, 2), round(38.5 / 100 * plot, 2)]
    assert re.findall(r"class='tick' text-anchor='middle'>(\d+%)<", chart) == ["0%", "25%", "50%", "75%", "100%"]


def test_loss_capture_warning_and_failed_ranks():
    capture = _finding("catalog.capture_validity", 0, 0.0, "high", ("GPU activity lost: 0 kernels for 120 launches",))
    trace = _trace([capture], loss=["1 event(s) dropped: ts is missing (event index 7)"], devices=())
    html = render_html(Diagnosis("dir", (trace,), failed_ranks=("dir/rank2.json.gz is a corrupt or truncated gzip",)))
    assert "Capture warning (high)" in html and "GPU activity lost: 0 kernels for 120 launches" in html
    assert html.index("Capture warning") < html.index("class='loading'")
    assert "<b>Data loss</b>" in html and "ts is missing (event index 7)" in html and "nothing lost" not in html
    assert "Rank files not loaded" in html and "rank2.json.gz is a corrupt" in html
    assert "none recorded (no deviceProperties in the trace)" in html


# -- the ledger chart: the verdict's numbers, per window --------------------------------------------------
WINDOWS = (LedgerWindow(1, True, (("busy.gemm", 50_000_000), ("idle.launch", 250_000_000))),
           LedgerWindow(2, False, (("busy.gemm", 60_000_000), ("busy.comm_exposed", 30_000_000),
                                   ("idle.launch", 10_000_000))),
           LedgerWindow(3, False, (("busy.gemm", 70_000_000), ("busy.comm_exposed", 20_000_000),
                                   ("idle.launch", 10_000_000), ("idle.sync", 0))))


def _ledger_trace(representative: bool = True, per_step=None):
    analysed = [w for w in WINDOWS if not representative or not w.cold]
    totals: dict[str, int] = {}
    for w in analysed:
        for b, ns in w.buckets:
            totals[b] = totals.get(b, 0) + ns
    lane = sum(totals.values())
    ledger = tuple(LedgerBucket(b, ns, round(100.0 * ns / lane, 2)) for b, ns in sorted(totals.items(), key=lambda x: -x[1]))
    steps = per_step if per_step is not None else (StepRow(2, 100_000_000, None, 90_000_000, 90.0),
                                                    StepRow(3, 100_000_000, None, 90_000_000, 90.0))
    verdict = Verdict(2, 100_000_000, 200_000_000, 90.0, "communication-bound", "communication-bound: exposed "
                      "communication takes 25%", True, steps, cold_windows=1, lane_ns=lane, ledger=ledger,
                      steady_representative=representative, ledger_windows=WINDOWS)
    return TraceDiagnosis("t.json", None, verdict, (), (), (), ())


def test_the_ledger_chart_draws_the_verdicts_ledger_per_window():
    t = _ledger_trace()
    html = render_html(Diagnosis("t.json", (t,)))
    bars = ledger_bars(html)
    assert list(bars) == ["1 (cold)", "2", "3"]
    assert bars["2"] == dict(WINDOWS[1].buckets) and bars["1 (cold)"] == dict(WINDOWS[0].buckets)
    assert "idle.sync" not in bars["3"]  # an empty bucket draws nothing
    # the steady windows' bars sum, bucket by bucket, to the verdict's ledger; the cold one is drawn faded
    summed: dict[str, int] = {}
    for label in ("2", "3"):
        for b, ns in bars[label].items():
            summed[b] = summed.get(b, 0) + ns
    assert summed == {b.bucket: b.dur_ns for b in t.verdict.ledger if b.dur_ns} == {
        "busy.gemm": 130_000_000, "busy.comm_exposed": 50_000_000, "idle.launch": 20_000_000}
    assert "<g data-column='1 (cold)' class='faded'>" in html and "<g data-column='2'>" in html
    # the legend: the verdict's shares and each bucket's time per steady step; no entry for an empty bucket
    legend = re.findall(r"<tr data-bucket='([^']+)' data-ns='(\d+)'>.*?<td>([\d.]+%)</td><td>([^<]*)</td>", html)
    assert legend == [("busy.gemm", "130000000", "65.0%", "65.0 ms"), ("busy.comm_exposed", "50000000", "25.0%", "25.0 ms"),
                      ("idle.launch", "20000000", "10.0%", "10.0 ms")]


def test_a_small_steady_sample_charts_every_window_as_analysed():
    t = _ledger_trace(representative=False)
    html = render_html(Diagnosis("t.json", (t,)))
    bars = ledger_bars(html)
    summed: dict[str, int] = {}
    for window in bars.values():
        for b, ns in window.items():
            summed[b] = summed.get(b, 0) + ns
    assert summed == {b.bucket: b.dur_ns for b in t.verdict.ledger if b.dur_ns}
    assert "class='faded'" not in html and "all windows sum to the verdict's ledger" in html


def test_a_column_without_values_is_left_out():
    """A GPU trace whose step table has no CPU busy: no CPU busy column (never a column of n/a); a CPU trace:
    no GPU columns."""
    html = render_html(Diagnosis("t.json", (_ledger_trace(),)))
    steps = html[html.index("<table class='steps'"):html.index("</table>", html.index("<table class='steps'"))]
    assert "CPU busy" not in steps and "n/a" not in steps and "<th>GPU busy</th>" in steps
    cpu = _ledger_trace(per_step=(StepRow(2, 100_000_000, 40_000_000, None, None),))
    html = render_html(Diagnosis("t.json", (cpu,)))
    steps = html[html.index("<table class='steps'"):html.index("</table>", html.index("<table class='steps'"))]
    assert "<th>CPU busy</th>" in steps and "GPU" not in steps


def test_the_page_is_small_and_runs_no_script():
    html = render_html(Diagnosis("t.json", (_ledger_trace(), _trace([_finding("catalog.a", 100_000, 0.01)]))))
    assert "<script" not in html.lower() and len(html.encode()) < 60_000
    assert not re.search(r'(src|href)=["\']https?://', html)  # nothing fetched at view time


def test_ranks_chart_is_each_ranks_mean_step():
    a, b = _ledger_trace(), _ledger_trace()
    from dataclasses import replace

    html = render_html(Diagnosis("job", (replace(a, rank=0), replace(b, rank=1)),
                                 {"ranks": 2, "straggler": None, "narration": "No straggler: the ranks agree."}))
    ranks = html[html.index("<section id='ranks'>"):]
    assert "No straggler: the ranks agree." in ranks
    bars = dict(re.findall(r"<g data-column='(rank \d)'>(.*?)</g>", ranks, flags=re.S))
    assert list(bars) == ["rank 0", "rank 1"]
    got = {bucket: int(ns) for bucket, ns in re.findall(r"data-bucket='([^']+)' data-ns='(\d+)'", bars["rank 0"])}
    assert got == {"busy.gemm": 65_000_000, "busy.comm_exposed": 25_000_000, "idle.launch": 10_000_000}


def test_html_on_a_terminal_is_refused_and_a_file_gets_the_page(tmp_path):
    """`--format html` without -o on a terminal: one sentence, exit 2, before any load; redirected to a file
    (what a shell's `>` does), the page."""
    import os
    import pty
    import subprocess
    import sys
    import time
    from pathlib import Path

    command = [str(Path(sys.executable).with_name("kineto-sql")), "diagnose",
               str(Path(__file__).resolve().parents[1] / "golden" / "traces" / "sync_item_planted.json.gz"),
               "--format", "html", "--jobs", "1"]
    main, terminal = pty.openpty()
    try:
        started = time.perf_counter()
        refused = subprocess.run(command, stdout=terminal, stderr=subprocess.PIPE, timeout=120)
        took = time.perf_counter() - started
    finally:
        os.close(terminal)
        os.close(main)
    assert refused.returncode == 2
    assert refused.stderr.decode().splitlines() == [
        "error: --format html writes a whole page: add -o report.html (or redirect stdout to a file)"]
    assert took < 20  # refused before the trace is read, not after a diagnosis
    page = tmp_path / "report.html"
    with page.open("wb") as out:
        written = subprocess.run(command + ["-q"], stdout=out, stderr=subprocess.PIPE, timeout=300)
    assert written.returncode == 0, written.stderr
    assert page.read_text().startswith("<!doctype html>") and "<figure class='ledger'>" in page.read_text()
