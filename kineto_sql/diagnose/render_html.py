"""A diagnosis as one self-contained HTML file, nothing fetched at view time: the verdict with its ledger
plotted per step, the findings in the words of the Markdown report (rendered by markdown-it-py), the tables.

A trace's section is its PARTS in order, each a function of the trace: a new part (a what-if section) is one
more function in that tuple."""
from __future__ import annotations

import html
import importlib.resources
from datetime import datetime, timezone
from string import Template

from markdown_it import MarkdownIt

from kineto_sql import __version__
from kineto_sql.diagnose.model import Diagnosis, TraceDiagnosis
from kineto_sql.diagnose.narrate import COSTS_ADD_UP, ms, pct, reason, step_summary
from kineto_sql.diagnose.render_svg import color, share_bars, stacked_bars
from kineto_sql.diagnose.render_text import (JOB_PATH, finding_markdown, findings_table, job_path_steps, md,
                                             together_sentence)

_TEMPLATE = Template(importlib.resources.files("kineto_sql").joinpath("diagnose/report.html").read_text())
CAPTURE_VALIDITY = "catalog.capture_validity"
_COLORS = {"high": "#c62828", "medium": "#ef6c00", "low": "#f9a825", "info": "#607d8b"}
# CommonMark with tables; raw HTML in the text is shown as text (every trace-controlled string is escaped)
_MD = MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown_html(lines) -> str:
    return _MD.render("\n".join(lines) if not isinstance(lines, str) else lines)


def inline_html(text: str) -> str:
    """Plain text (possibly trace-controlled) as inline HTML, through the Markdown escaping of the md report."""
    return _MD.renderInline(md(text))


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
    """Step time, CPU and GPU busy per step; a column no step has a value for is left out, not shown as n/a."""
    v = t.verdict
    if not v.per_step:
        return "<p id='steps'>No ProfilerStep#N windows: findings are weighed against the whole capture.</p>"

    def cell(ns):
        return ms(ns) if ns is not None else "n/a"

    columns = [("step", lambda s: str(s.step)), ("step time", lambda s: cell(s.dur_ns))]
    if any(s.cpu_busy_ns is not None for s in v.per_step):
        columns.append(("CPU busy", lambda s: cell(s.cpu_busy_ns)))
    if any(s.gpu_busy_ns is not None for s in v.per_step):
        columns.append(("GPU busy", lambda s: cell(s.gpu_busy_ns)))
        columns.append(("GPU occupancy",
                        lambda s: f"{s.gpu_occupancy_pct:.0f}%" if s.gpu_occupancy_pct is not None else "n/a"))
    head = "".join(f"<th>{name}</th>" for name, _ in columns)
    rows = "".join("<tr>" + "".join(f"<td>{get(s)}</td>" for _, get in columns) + "</tr>" for s in v.per_step)
    occupancy = "; GPU occupancy = GPU busy / step" if len(columns) > 3 else ""
    return (f"<table class='steps' id='steps-{_anchor(t)}'><caption>Per step (reading.step_table: step time, "
            f"busy time{occupancy})</caption><tr>{head}</tr>{rows}</table>")


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




def analysed_windows(t: TraceDiagnosis):
    """The ledger windows the verdict's ledger sums: the steady ones, or every one when they are too small a
    sample (Verdict.steady_representative)."""
    v = t.verdict
    return [w for w in v.ledger_windows if v.steady_representative is False or not w.cold]


def _window_label(w) -> str:
    step = "capture" if w.step is None else str(w.step)
    return f"{step} (cold)" if w.cold else step


def _swatch(bucket: str) -> str:
    return f"<span class='swatch' style='background:{color(bucket)}'></span>{html.escape(bucket)}"


def _ledger_html(t: TraceDiagnosis) -> str:
    """The verdict's ledger, per window: stacked buckets (time x devices), with the verdict's own shares in
    the legend. The bars of the analysed windows sum, bucket by bucket, to the verdict's ledger."""
    v = t.verdict
    if not v.ledger_windows or not v.ledger:
        return ""
    order = [b.bucket for b in v.ledger]
    columns = [(_window_label(w), dict(w.buckets), w.cold and v.steady_representative) for w in v.ledger_windows]
    analysed = len(analysed_windows(t))
    which = "steady" if v.steady_representative else "all"
    title = f"Where each step's time goes (reading.step_ledger): {which} windows sum to the verdict's ledger"
    chart = stacked_bars(columns, order, title, "ms (window x devices)")
    legend = "".join(
        f"<tr data-bucket='{html.escape(b.bucket, quote=True)}' data-ns='{b.dur_ns}'><td>{_swatch(b.bucket)}</td>"
        f"<td>{pct(b.pct)}</td><td>{ms(round(b.dur_ns / analysed)) if analysed else ''}</td></tr>"
        for b in v.ledger if b.dur_ns > 0)
    cold = " Cold windows are drawn faded: one-time work, kept out of the shares." \
        if v.steady_representative and any(w.cold for w in v.ledger_windows) else ""
    return (f"<figure class='ledger'><figcaption>{html.escape(title, quote=False)}.{cold}</figcaption><div class='chartrow'>"
            f"{chart}<table class='legend'><tr><th>bucket</th><th>share</th><th>per step</th></tr>{legend}</table>"
            "</div></figure>")


def _verdict_html(t: TraceDiagnosis) -> str:
    v = t.verdict
    steps = f"{step_summary(v)}. " if v.steps else ""
    extra = f"<br>{inline_html(v.sample_sentence)}" if v.sample_sentence else ""
    if t.critical_path:
        extra += ("<br>Critical path (steady windows, reading.critical_path): " + html.escape(
            ", ".join(f"{b['bucket']} {b['pct']:.0f}%" for b in t.critical_path[:6] if b["pct"] >= 0.5)))
    return (f"<div class='verdict'><b>{html.escape(v.regime)}</b>: {steps}{inline_html(reason(v) + '.')}"
            f"{extra}</div>")


def _findings_html(t: TraceDiagnosis) -> str:
    """The Markdown report's findings, rendered: the sentence on how costs add up, the table, a share chart,
    then each finding's block in a card coloured by its severity."""
    if not t.findings:
        return "<p>No detector fired.</p>"
    ranked = [f for f in t.findings if f.impact_ns > 0 and f.impact_pct is not None][:10]
    whole = "steps" if t.verdict.steps else "capture"
    title = f"Findings: cost, % of the profiled {whole} (the axis is all of it)"
    chart = share_bars([(f"{i}. {f.title.split(':')[0]}", f.impact_pct, _COLORS[f.severity],
                         f"{f.title}: {ms(f.impact_ns)}") for i, f in enumerate(ranked, 1)], title)
    chart = f"<figure class='findings-chart'><figcaption>{html.escape(title, quote=False)}</figcaption>{chart}</figure>" \
        if chart else ""
    cards = "".join(f"<div class='finding {f.severity}' id='{_anchor(t)}-finding-{i}'>"
                    f"{markdown_html(finding_markdown(i, f))}</div>" for i, f in enumerate(t.findings, 1))
    together = markdown_html(md(together_sentence(t))) if together_sentence(t) else ""
    return (f"<div class='findings'><h3>Findings</h3>{markdown_html(md(COSTS_ADD_UP))}"
            f"{markdown_html(findings_table(t))}{chart}{cards}{together}</div>")


def _details_html(t: TraceDiagnosis) -> str:
    return (f"<details><summary>Loading, silent and skipped rules</summary>{_loading_html(t)}{_rules_html(t)}"
            "</details>")


def _title_html(t: TraceDiagnosis) -> str:
    rank = f" (rank {t.rank})" if t.rank is not None else ""
    return f"<h2>{html.escape(t.source)}{rank}</h2>"


# One trace's section, top to bottom.
PARTS = (_title_html, _capture_html, _verdict_html, _ledger_html, _steps_table, _findings_html, _ops_table,
         _details_html)


def _job_path_html(d: Diagnosis) -> str:
    """The job's critical path across ranks, per steady step: the lines of the text report."""
    if not d.job_critical_path:
        return ""
    items = "".join(f"<li>{inline_html(line)}</li>" for line in job_path_steps(d))
    return (f"<div class='job-path' id='job-critical-path'><p>{html.escape(JOB_PATH[0].upper() + JOB_PATH[1:])}:"
            f"</p><ul>{items}</ul></div>")


def _ranks_html(d: Diagnosis) -> str:
    """Across ranks: the cross-rank reading, the job's critical path, and each rank's ledger per step (its
    analysed windows' mean)."""
    ranked = [t for t in d.traces if t.rank is not None and t.verdict.ledger]
    narration = (d.ranks_summary or {}).get("narration", "")
    if not narration and len(ranked) < 2 and not d.job_critical_path:
        return ""
    chart = ""
    if len(ranked) >= 2:
        order = [b.bucket for b in max(ranked, key=lambda t: t.verdict.lane_ns or 0).verdict.ledger]
        columns = []
        for t in ranked:
            n = max(len(analysed_windows(t)), 1)
            columns.append((f"rank {t.rank}", {b.bucket: round(b.dur_ns / n) for b in t.verdict.ledger}, False))
        title = "Per rank: the ledger of a mean step (reading.step_ledger)"
        drawn = [b for b in order if any(c[1].get(b) for c in columns)]
        drawn += sorted({b for c in columns for b, ns in c[1].items() if ns and b not in drawn})
        legend = "".join(f"<tr><td>{_swatch(b)}</td></tr>" for b in drawn)
        chart = (f"<figure class='ranks'><figcaption>{html.escape(title, quote=False)}</figcaption>"
                 f"<div class='chartrow'>{stacked_bars(columns, order, title, 'ms per step (x devices)')}"
                 f"<table class='legend'>{legend}</table></div></figure>")
    links = " ".join(f"<a href='#{_anchor(t)}'>rank {t.rank}</a>" for t in ranked)
    return (f"<section id='ranks'><h2>Across ranks</h2><p>{inline_html(narration)}</p>{_job_path_html(d)}{chart}"
            f"<p class='ranklinks'>{links}</p></section>")


def render_html(d: Diagnosis) -> str:
    sections = [f"<section id='{_anchor(t)}'>" + "".join(part(t) for part in PARTS) + "</section>" for t in d.traces]
    ranks = _ranks_html(d)
    if d.failed_ranks:
        ranks += ("<section class='failed'><h2>Rank files not loaded</h2><ul>"
                  + "".join(f"<li>{html.escape(f)}</li>" for f in d.failed_ranks) + "</ul></section>")
    # the job's reading leads when it names a straggler (the answer first), else it closes the page
    body = ranks + "\n".join(sections) if d.names_straggler else "\n".join(sections) + ranks
    return _TEMPLATE.substitute(title=html.escape(f"kineto-sql diagnosis: {d.target}"), header=_header_html(d),
                                body=body)
