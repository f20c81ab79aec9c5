"""A diagnosis as one self-contained HTML file: verdict, findings and plotly plots, nothing fetched at view time."""
from __future__ import annotations

import html
import importlib.resources
from datetime import datetime, timezone
from string import Template

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from kineto_sql import __version__
from kineto_sql.diagnose.model import Diagnosis, TraceDiagnosis
from kineto_sql.diagnose.narrate import ms, pct, share_of

_TEMPLATE = Template(importlib.resources.files("kineto_sql").joinpath("diagnose/report.html").read_text())
CAPTURE_VALIDITY = "catalog.capture_validity"
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
    """Each finding's estimated cost on an axis that is the whole profiled step time (0-100%): a 0.1 ms
    finding in a 400 ms step is a sliver, not a full-width bar."""
    ranked = [f for f in t.findings if f.impact_ns > 0][:10]
    if not ranked:
        return []
    scaled = all(f.impact_pct is not None for f in ranked)
    labels = [f"{i}. {f.title.split(':')[0]}" for i, f in enumerate(ranked, 1)][::-1]
    fig = go.Figure(go.Bar(
        x=[(f.impact_pct if scaled else f.impact_ns / 1e6) for f in ranked][::-1], y=labels, orientation="h",
        hovertext=[f"{f.title}: {ms(f.impact_ns)}" for f in ranked][::-1],
        marker_color=[_COLORS[f.severity] for f in ranked][::-1]))
    if scaled:
        whole = "steps" if t.verdict.steps else "capture"
        fig.update_layout(title=f"findings: cost, % of profiled {whole} (axis = all of it)",
                          xaxis=dict(range=[0, 100], ticksuffix="%"))
    else:
        fig.update_layout(title="findings by estimated cost (ms)")
    fig.update_layout(yaxis=dict(automargin=True))
    return [_div(fig)]


def _ops_plot(t: TraceDiagnosis) -> list[str]:
    """Top ops, numbered: the plot's labels are the numbers of the table beside it, which holds the full names."""
    if not t.top_ops:
        return []
    name_col = _name_col(t)
    if name_col is None:
        return []
    fig = go.Figure()
    numbers = [str(i) for i in range(1, len(t.top_ops) + 1)][::-1]
    names = [str(r[name_col]) for r in t.top_ops][::-1]
    for col, label, color in (("self_device_dur", "self device (ms)", "#43a047"), ("self_cpu_dur", "self CPU (ms)", "#1e88e5")):
        if col in t.top_ops[0]:
            fig.add_bar(name=label, y=numbers, x=[(r.get(col) or 0) / 1e6 for r in t.top_ops][::-1],
                        hovertext=names, orientation="h", marker_color=color)
    if not fig.data:
        return []
    fig.update_layout(title="top ops, whole-trace totals (ms; numbers as in the table)", barmode="group", height=400)
    return [_div(fig)]


def _name_col(t: TraceDiagnosis) -> str | None:
    return next((c for c in ("name", "op", "op_name") if t.top_ops and c in t.top_ops[0]), None)


def _ops_table(t: TraceDiagnosis) -> str:
    name_col = _name_col(t)
    if name_col is None:
        return ""
    windows = t.verdict.steps + t.verdict.cold_windows  # the op table covers cold windows too
    span = f"all {windows} steps and outside them" if t.verdict.steps else "the whole capture"
    rows = "".join(
        f"<tr><td>{i}</td><td class='name'>{html.escape(str(r[name_col]))}</td>"
        f"<td>{ms(r.get('self_device_dur') or 0)}</td><td>{ms(r.get('self_cpu_dur') or 0)}</td>"
        f"<td>{html.escape(str(r.get('calls', '')))}</td></tr>" for i, r in enumerate(t.top_ops, 1))
    return (f"<table class='ops'><caption>Top ops (reading.op_table): whole-trace totals over {span}, not per step"
            f"</caption><tr><th>#</th><th>op</th><th>self device</th><th>self CPU</th><th>calls</th></tr>{rows}</table>")


def _steps_table(t: TraceDiagnosis) -> str:
    v = t.verdict
    if not v.per_step:
        return "<p id='steps'>No ProfilerStep#N windows: findings are weighed against the whole capture.</p>"

    def cell(ns):
        return ms(ns) if ns is not None else "n/a"

    rows = "".join(
        f"<tr><td>{s.step}</td><td>{cell(s.dur_ns)}</td><td>{cell(s.cpu_busy_ns)}</td><td>{cell(s.gpu_busy_ns)}</td>"
        f"<td>{f'{s.gpu_occupancy_pct:.0f}%' if s.gpu_occupancy_pct is not None else 'n/a'}</td></tr>"
        for s in v.per_step)
    return (f"<table class='steps' id='steps-{_anchor(t)}'><caption>Per step (step time, CPU and GPU busy time; "
            "GPU occupancy = GPU busy / step)</caption><tr><th>step</th><th>step time</th><th>CPU busy</th>"
            f"<th>GPU busy</th><th>GPU occupancy</th></tr>{rows}</table>")


def _loading_html(t: TraceDiagnosis) -> str:
    if t.loss:
        head = ("<p class='loss'><b>Data loss</b> (loaded with --allow-loss): what is below is computed without "
                "these events.</p><ul class='loss'>" + "".join(f"<li>{html.escape(x)}</li>" for x in t.loss) + "</ul>")
    else:
        head = "<p class='kept'>Every event of the file was loaded: nothing lost (engine stats clean).</p>"
    fixes = "".join(f"<li>{html.escape(f)}</li>" for f in t.loader_fixes)
    fixes = (f"<p>What the loader changed so that the engine keeps every event (kind: events):</p><ul>{fixes}</ul>"
             if fixes else "<p>The loader changed nothing: the file loaded exactly as written.</p>")
    return f"<div class='loading'><h3>Loading</h3>{head}{fixes}</div>"


def _capture_html(t: TraceDiagnosis) -> str:
    """A warning about the capture itself (catalog.capture_validity) goes above every number it makes suspect."""
    found = [f for f in t.findings if f.query_id == CAPTURE_VALIDITY]
    if not found:
        return ""
    items = "".join(f"<li>{html.escape(e)}</li>" for f in found for e in f.evidence)
    return (f"<div class='capture {found[0].severity}'><b>Capture warning ({found[0].severity}):</b> the numbers "
            f"below may be wrong because of how the trace was recorded.<ul>{items}</ul></div>")


def _rules_html(t: TraceDiagnosis) -> str:
    silent = ", ".join(f"<code>{html.escape(q)}</code>" for q in t.silent) or "none"
    skipped = "".join(f"<li><code>{html.escape(s.query_id)}</code>: {html.escape(s.reason)}</li>" for s in t.skipped)
    errors = "".join(f"<li><code>{html.escape(s.query_id)}</code>: {html.escape(s.reason)}</li>" for s in t.errors)
    return ("<div class='rules'><h3>Rules that did not fire</h3>"
            f"<p><b>Silent</b> ({len(t.silent)}: ran and found nothing): {silent}</p>"
            f"<p><b>Skipped</b> ({len(t.skipped)}: the trace lacks what they need):</p><ul>{skipped or '<li>none</li>'}</ul>"
            + (f"<p><b>Failed</b> ({len(t.errors)}):</p><ul>{errors}</ul>" if errors else "") + "</div>")


def _anchor(t: TraceDiagnosis) -> str:
    return f"rank{t.rank}" if t.rank is not None else "trace"


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
        share = f", {pct(f.impact_pct)} of the {share_of(f)}" if f.impact_pct is not None else ""
        evidence = "".join(f"<li>{html.escape(e)}</li>" for e in f.evidence)
        reproduce = "".join(f"<code>{html.escape(c)}</code><br>" for c in f.reproduce)
        cards.append(
            f'<div class="finding {f.severity}"><h3>{i}. {html.escape(f.title)} '
            f'<span class="sev">{f.severity}</span> <span class="cost">{ms(f.impact_ns)}{share}</span></h3>'
            f"<p>{html.escape(f.narration)}</p><ul>{evidence}</ul>"
            f"<p><b>Catalog row:</b> {html.escape(f.catalog_row)}<br><b>Confirm:</b> {html.escape(f.confirming)}"
            f"<br><b>Fix:</b> {html.escape(f.fix)}</p><p class='repro'>{reproduce}</p></div>")
    return "\n".join(cards)


def _header_html(d: Diagnosis) -> str:
    devices = sorted({dev for t in d.traces for dev in t.devices})
    engines = sorted({t.engine for t in d.traces if t.engine})
    rows = [("trace", html.escape(d.target)),
            ("GPU", html.escape("; ".join(devices)) if devices else "none recorded (no deviceProperties in the trace)"),
            ("kineto-sql", html.escape(__version__) + (f", engine {html.escape(', '.join(engines))}" if engines else "")),
            ("date", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
            ("worst severity", f"<b>{d.worst_severity}</b>")]
    if len(d.traces) > 1:
        rows.insert(1, ("ranks", str(len(d.traces))))
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table class='header' id='report-header'>{body}</table>"


def render_html(d: Diagnosis) -> str:
    sections = []
    for t in d.traces:
        v = t.verdict
        rank = f" (rank {t.rank})" if t.rank is not None else ""
        occ = f", GPU busy {v.gpu_occupancy_pct:.0f}%" if v.gpu_occupancy_pct is not None else ""
        steps = f"{v.steps} steps, median step {ms(v.median_step_ns)}{occ}. " if v.steps else ""
        head = (f"<h2>{html.escape(t.source)}{rank}</h2><div class='verdict'><b>{html.escape(v.regime)}</b>: "
                f"{steps}{html.escape(v.regime_reason)}.</div>")
        plots = "".join(f"<div class='plot'>{p}</div>" for p in _step_plots(t) + _findings_plot(t) + _ops_plot(t))
        sections.append(f"<section id='{_anchor(t)}'>{head}{_capture_html(t)}{_loading_html(t)}{_steps_table(t)}"
                        f"<div class='plots'>{plots}</div>{_ops_table(t)}{_findings_html(t)}{_rules_html(t)}</section>")
    ranks = ""
    rank_plots = _ranks_plot(d)
    if d.ranks_summary or rank_plots:
        narration = html.escape((d.ranks_summary or {}).get("narration", ""))
        ranks = f"<section><h2>Across ranks</h2><p>{narration}</p>{''.join(rank_plots)}</section>"
    if d.failed_ranks:
        ranks += ("<section class='failed'><h2>Rank files not loaded</h2><ul>"
                  + "".join(f"<li>{html.escape(f)}</li>" for f in d.failed_ranks) + "</ul></section>")
    return _TEMPLATE.substitute(
        title=html.escape(f"kineto-sql diagnosis: {d.target}"),
        plotlyjs=get_plotlyjs(),
        header=_header_html(d),
        body=ranks + "\n".join(sections) if d.names_straggler else "\n".join(sections) + ranks,
        worst=d.worst_severity,
    )
