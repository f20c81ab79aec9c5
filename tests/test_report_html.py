"""The HTML report's sections, from a hand-built Diagnosis (no engine): header, capture warning, loading and
loss, per-step table, rules named, failed ranks, and the findings chart scaled to the step."""
from __future__ import annotations

import json
import re

from kineto_sql import __version__
from kineto_sql.diagnose.model import Diagnosis, Finding, Skipped, StepRow, TraceDiagnosis, Verdict, Where
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


def _chart(html: str) -> dict:
    """The plotly figure of the findings chart: its data and layout as JSON."""
    for match in re.finditer(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{', html, flags=re.S):
        layout = json.loads(match.group(2))
        if layout.get("title", {}).get("text", "").startswith("findings"):
            return {"data": json.loads(match.group(1)), "layout": layout}
    raise AssertionError("no findings chart")


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
    chart = _chart(render_html(Diagnosis("t.json", (_trace([_finding("catalog.a", 100_000, 0.01)]),))))
    assert chart["layout"]["xaxis"]["range"] == [0, 100]
    assert chart["data"][0]["x"] == [0.01]


def test_loss_capture_warning_and_failed_ranks():
    capture = _finding("catalog.capture_validity", 0, 0.0, "high", ("GPU activity lost: 0 kernels for 120 launches",))
    trace = _trace([capture], loss=["1 event(s) dropped: ts is missing (event index 7)"], devices=())
    html = render_html(Diagnosis("dir", (trace,), failed_ranks=("dir/rank2.json.gz is a corrupt or truncated gzip",)))
    assert "Capture warning (high)" in html and "GPU activity lost: 0 kernels for 120 launches" in html
    assert html.index("Capture warning") < html.index("class='loading'")
    assert "<b>Data loss</b>" in html and "ts is missing (event index 7)" in html and "nothing lost" not in html
    assert "Rank files not loaded" in html and "rank2.json.gz is a corrupt" in html
    assert "none recorded (no deviceProperties in the trace)" in html
