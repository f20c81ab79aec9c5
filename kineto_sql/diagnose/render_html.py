"""A diagnosis as one self-contained HTML file: verdict, findings and plotly plots, nothing fetched at view time."""
from __future__ import annotations

import html
import importlib.resources
from string import Template

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from kineto_sql.diagnose.model import Diagnosis, TraceDiagnosis
from kineto_sql.diagnose.narrate import ms, pct

_TEMPLATE = Template(importlib.resources.files("kineto_sql").joinpath("diagnose/report.html").read_text())
_COLORS = {"high": "#c62828", "medium": "#ef6c00", "low": "#f9a825", "info": "#607d8b"}


def _div(fig: go.Figure) -> str:
    fig.update_layout(margin=dict(l=40, r=20, t=40, b=40), height=320, template="plotly_white")
    return fig.to_html(full_html=False, include_plotlyjs=False)


def _step_plots(t: TraceDiagnosis) -> list[str]:
    v = t.verdict
    if not v.per_step:
        return []
    steps = [str(s.step) for s in v.per_step]
    busy = go.Figure()
    busy.add_bar(name="step time", x=steps, y=[s.dur_ns / 1e6 for s in v.per_step], marker_color="#b0bec5")
    busy.add_bar(name="CPU busy", x=steps, y=[(s.cpu_busy_ns or 0) / 1e6 for s in v.per_step], marker_color="#1e88e5")
    if v.has_gpu:
        busy.add_bar(name="GPU busy", x=steps, y=[(s.gpu_busy_ns or 0) / 1e6 for s in v.per_step], marker_color="#43a047")
    busy.update_layout(title="per step: CPU vs GPU busy (ms)", barmode="group", xaxis_title="step")
    plots = [_div(busy)]
    if v.has_gpu:
        split = go.Figure()
        gpu = [(s.gpu_busy_ns or 0) / 1e6 for s in v.per_step]
        idle = [max(s.dur_ns / 1e6 - g, 0) for s, g in zip(v.per_step, gpu)]
        split.add_bar(name="GPU busy", x=steps, y=gpu, marker_color="#43a047")
        split.add_bar(name="GPU idle", x=steps, y=idle, marker_color="#e53935")
        split.update_layout(title="per step: where the step time goes (ms)", barmode="stack", xaxis_title="step")
        plots.append(_div(split))
    return plots


def _findings_plot(t: TraceDiagnosis) -> list[str]:
    ranked = [f for f in t.findings if f.impact_ns > 0][:10]
    if not ranked:
        return []
    fig = go.Figure(go.Bar(
        x=[f.impact_ns / 1e6 for f in ranked][::-1], y=[f.title.split(":")[0][:40] for f in ranked][::-1],
        orientation="h",
        marker_color=[_COLORS[f.severity] for f in ranked][::-1]))
    fig.update_layout(title="findings by estimated cost (ms)")
    return [_div(fig)]


def _ops_plot(t: TraceDiagnosis) -> list[str]:
    if not t.top_ops:
        return []
    name_col = next((c for c in ("name", "op", "op_name") if c in t.top_ops[0]), None)
    if name_col is None:
        return []
    fig = go.Figure()
    for col, label, color in (("self_device_dur", "self device (ms)", "#43a047"), ("self_cpu_dur", "self CPU (ms)", "#1e88e5")):
        if col in t.top_ops[0]:
            fig.add_bar(name=label, y=[str(r[name_col])[:60] for r in t.top_ops][::-1],
                        x=[(r.get(col) or 0) / 1e6 for r in t.top_ops][::-1], orientation="h", marker_color=color)
    if not fig.data:
        return []
    fig.update_layout(title="top ops (reading.op_table)", barmode="group", height=400)
    return [_div(fig)]


def _ranks_plot(d: Diagnosis) -> list[str]:
    ranked = [t for t in d.traces if t.rank is not None and t.verdict.median_step_ns]
    if len(ranked) < 2:
        return []
    fig = go.Figure()
    fig.add_bar(name="median step (ms)", x=[str(t.rank) for t in ranked],
                y=[t.verdict.median_step_ns / 1e6 for t in ranked], marker_color="#5e35b1")
    fig.add_bar(name="findings cost (ms)", x=[str(t.rank) for t in ranked],
                y=[sum(f.impact_ns for f in t.findings) / 1e6 for t in ranked], marker_color="#ef6c00")
    fig.update_layout(title="per rank", barmode="group", xaxis_title="rank")
    return [_div(fig)]


def _findings_html(t: TraceDiagnosis) -> str:
    if not t.findings:
        return "<p>No detector fired.</p>"
    cards = []
    for i, f in enumerate(t.findings, 1):
        share = f", {pct(f.impact_pct)} of profiled time" if f.impact_pct is not None else ""
        evidence = "".join(f"<li>{html.escape(e)}</li>" for e in f.evidence)
        reproduce = "".join(f"<code>{html.escape(c)}</code><br>" for c in f.reproduce)
        cards.append(
            f'<div class="finding {f.severity}"><h3>{i}. {html.escape(f.title)} '
            f'<span class="sev">{f.severity}</span> <span class="cost">{ms(f.impact_ns)}{share}</span></h3>'
            f"<p>{html.escape(f.narration)}</p><ul>{evidence}</ul>"
            f"<p><b>Catalog row:</b> {html.escape(f.catalog_row)}<br><b>Confirm:</b> {html.escape(f.confirming)}"
            f"<br><b>Fix:</b> {html.escape(f.fix)}</p><p class='repro'>{reproduce}</p></div>")
    return "\n".join(cards)


def render_html(d: Diagnosis) -> str:
    sections = []
    for t in d.traces:
        v = t.verdict
        rank = f" (rank {t.rank})" if t.rank is not None else ""
        occ = f", GPU busy {v.gpu_occupancy_pct:.0f}%" if v.gpu_occupancy_pct is not None else ""
        head = (f"<h2>{html.escape(t.source)}{rank}</h2><div class='verdict'><b>{html.escape(v.regime)}</b>: "
                f"{v.steps} steps, median step {ms(v.median_step_ns)}{occ}. {html.escape(v.regime_reason)}.</div>")
        plots = "".join(f"<div class='plot'>{p}</div>" for p in _step_plots(t) + _findings_plot(t) + _ops_plot(t))
        skipped = "".join(f"<li>{html.escape(s.query_id)}: {html.escape(s.reason)}</li>" for s in t.skipped)
        sections.append(f"<section>{head}<div class='plots'>{plots}</div>{_findings_html(t)}"
                        f"<details><summary>{len(t.silent)} silent, {len(t.skipped)} skipped</summary>"
                        f"<ul>{skipped}</ul></details></section>")
    ranks = ""
    rank_plots = _ranks_plot(d)
    if d.ranks_summary or rank_plots:
        narration = html.escape((d.ranks_summary or {}).get("narration", ""))
        ranks = f"<section><h2>Across ranks</h2><p>{narration}</p>{''.join(rank_plots)}</section>"
    return _TEMPLATE.substitute(
        title=html.escape(f"kineto-sql diagnosis: {d.target}"),
        plotlyjs=get_plotlyjs(),
        body="\n".join(sections) + ranks,
        worst=d.worst_severity,
    )
