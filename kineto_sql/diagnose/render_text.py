"""A diagnosis as text for a terminal, and as Markdown for an issue or a pull request."""
from __future__ import annotations

import html
import re

from kineto_sql.diagnose.model import Diagnosis, Finding, TraceDiagnosis
from kineto_sql.diagnose.narrate import COSTS_ADD_UP, REPRODUCE, block, ms, pct, reason, step_summary
from kineto_sql.whatif.annotate import sentence as whatif_sentence

TOP = 5
# Markdown reports are posted to CI logs and pull-request pages, which render inline HTML: every string a
# trace controls (op and kernel names, device names, paths, evidence) is written as text. HTML is escaped as
# the HTML report escapes it; a table's cell separator, link brackets and backticks are backslash-escaped.
_MD_PUNCT = re.compile(r"([\\`|\[\]])")


def md(value) -> str:
    """Trace-controlled text for Markdown prose or a table cell: shown as written, never as markup."""
    return _MD_PUNCT.sub(r"\\\1", html.escape(str(value), quote=False))


def md_code(value) -> str:
    """`value` as an inline code span whose fence is longer than any backtick run inside it (CommonMark)."""
    text = str(value).replace("\n", " ")
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _code_block(lines) -> list[str]:
    body = [str(c).replace("\n", " ") for c in lines]
    fence = "`" * max(3, max((len(r) + 1 for c in body for r in re.findall("`+", c)), default=0))
    return [f"  {fence}", *(f"  {c}" for c in body), f"  {fence}"]


def _verdict_lines(t: TraceDiagnosis) -> list[str]:
    v = t.verdict
    rank = f" (rank {t.rank})" if t.rank is not None else ""
    lines = [f"{t.source}{rank}"]
    if t.devices or t.engine:
        lines.append(f"capture: {'; '.join(t.devices) or 'no GPU in deviceProperties'}; engine {t.engine or 'n/a'}")
    if t.loss:
        lines.append("DATA LOSS (loaded with --allow-loss): " + "; ".join(t.loss))
    if v.steps:
        lines.append(f"verdict: {v.regime}: {step_summary(v)}.")
    else:
        lines.append(f"verdict: {v.regime}.")
    lines.append(f"  {reason(v)}.")
    if v.sample_sentence:
        lines.append(f"  {v.sample_sentence}")
    if v.ledger:
        lines.append(f"  ledger ({'steady' if v.steady_representative else 'all windows'} time, reading.step_ledger): "
                     + ", ".join(f"{b.bucket} {b.pct:.0f}%" for b in v.ledger[:6] if b.pct >= 0.5))
    if t.critical_path:
        lines.append("  critical path (steady windows, reading.critical_path): "
                     + ", ".join(f"{b['bucket']} {b['pct']:.0f}%" for b in t.critical_path[:6] if b["pct"] >= 0.5))
    return lines


def _finding_lines(i: int, f: Finding, markdown: bool) -> list[str]:
    """The finding's block (narrate.block: the words of every format), laid out for a terminal or Markdown."""
    b = block(f)
    if markdown:
        lines = [f"### {i}. {md(b.title)}", "", f"**{b.severity}**: {md(b.cost)}", ""]
        lines.extend(f"- **{label}:** {md(text)}" for label, text in b.lines)
        lines.extend([f"- {REPRODUCE}:", ""])
        lines.extend(_code_block(b.commands))
        return lines
    lines = [f"{i}. [{b.severity}] {b.title}", f"   cost: {b.cost}"]
    lines.extend(f"   {label}: {text}" for label, text in b.lines)
    lines.append(f"   {REPRODUCE}:")
    lines.extend(f"     {c}" for c in b.commands)
    return lines


def render_text(d: Diagnosis, top: int = TOP) -> str:
    out = []
    if d.names_straggler:  # the job's #1 finding: every rank's collective wait is for that rank
        what = ("data imbalance that moves between ranks: every step waits for that step's slowest rank"
                if d.ranks_summary.get("moving") else "the straggler every other rank waits for")
        out.extend([f"across ranks (first: {what}): " + d.ranks_summary.get("narration", ""), ""])
        out.extend([*job_path_lines(d), ""] if d.job_critical_path else [])
    for t in d.traces:
        out.extend(_verdict_lines(t))
        if t.findings:
            out.append(f"top findings (of {len(t.findings)}), ranked by cost per step. {COSTS_ADD_UP}")
            for i, f in enumerate(t.findings[:top], 1):
                out.extend(_finding_lines(i, f, markdown=False))
            if together := together_sentence(t):
                out.append(together)
        else:
            out.append("no detector fired.")
        out.extend(_top_ops_lines(t))
        out.append(_tail(t))
        out.append("")
    if d.ranks_summary and not d.names_straggler:
        out.append("across ranks: " + d.ranks_summary.get("narration", ""))
    if not d.names_straggler:
        out.extend(job_path_lines(d))
    for failure in d.failed_ranks:
        out.append(f"NOT LOADED: {failure}")
    return "\n".join(out).rstrip() + "\n"


JOB_PATH = ("job critical path across ranks (steady steps; each rank's dependency graph joined at its "
            "collectives): the rank and ledger bucket that hold each step")
JOB_PATH_STEPS = 5


def job_path_steps(d: Diagnosis) -> list[str]:
    """Per steady step (the first JOB_PATH_STEPS): 'step 10, 19.9 ms: rank 7 68% (idle.launch 52%, ...), rank 1
    32% (...)': each rank's share of the path, with its largest ledger buckets."""
    by_step: dict = {}
    for row in d.job_critical_path:
        by_step.setdefault(row["step"], []).append(row)
    out = []
    for step, rows in list(by_step.items())[:JOB_PATH_STEPS]:
        per_rank: dict = {}
        for row in rows:
            per_rank.setdefault(row["rank"], []).append(row)
        width = sum(r["ms"] for r in rows) or 1.0
        parts = []
        for rank, mine in sorted(per_rank.items(), key=lambda x: (-sum(r["ms"] for r in x[1]), x[0])):
            share = 100.0 * sum(r["ms"] for r in mine) / width
            named = ", ".join(f"{r['bucket']} {r['pct']:.0f}%" for r in mine[:3] if r["pct"] >= 0.5)
            parts.append(f"rank {rank} {share:.0f}%" + (f" ({named})" if named else ""))
        out.append(f"step {step}, {ms(round(width * 1e6))}: " + ", ".join(parts))
    if len(by_step) > JOB_PATH_STEPS:
        out.append(f"and {len(by_step) - JOB_PATH_STEPS} more steady steps (--format json lists them)")
    return out


def job_path_lines(d: Diagnosis) -> list[str]:
    if not d.job_critical_path:
        return []
    return [JOB_PATH + ":", *(f"  {line}" for line in job_path_steps(d))]


def _top_ops_lines(t: TraceDiagnosis, n: int = 5) -> list[str]:
    """Where the time goes by op (reading.op_table), before any timeline scrolling."""
    if not t.top_ops:
        return []
    windows = t.verdict.steps + t.verdict.cold_windows  # the op table covers cold windows too
    span = f"all {windows} steps and outside them" if t.verdict.steps else "the whole capture"
    lines = [f"top ops (reading.op_table): whole-trace totals over {span}, not per step: self device, self CPU"]
    for row in t.top_ops[:n]:
        lines.append(f"  {row.get('name')}: {ms(row.get('self_device_dur') or 0)} device, "
                     f"{ms(row.get('self_cpu_dur') or 0)} CPU, {row.get('calls')} calls")
    return lines


def _tail(t: TraceDiagnosis) -> str:
    parts = [f"silent ({len(t.silent)} detectors ran and found nothing): " + (", ".join(t.silent) or "none")]
    if t.skipped:
        parts.append("skipped: " + "; ".join(f"{s.query_id} ({s.reason})" for s in t.skipped))
    if t.errors:
        parts.append("errors: " + "; ".join(f"{s.query_id} ({s.reason})" for s in t.errors))
    if t.loss:
        parts.append("DATA LOSS (loaded with --allow-loss): " + "; ".join(t.loss))
    if t.loader_fixes:
        kept = "every event kept" if not t.loss else "see DATA LOSS"
        parts.append(f"loader fixes ({kept}): " + ", ".join(t.loader_fixes))
    return "\n".join(parts)


def together_sentence(t: TraceDiagnosis) -> str | None:
    """What the top fixes buy together (one replay), or None."""
    if together := whatif_sentence(t.combined_prediction):
        return ("top fixes together (" + ", ".join(t.combined_prediction["rules"]) + "): "
                + together.removeprefix("fixing this: "))
    return None


def findings_table(t: TraceDiagnosis) -> list[str]:
    """Every finding of one trace in one Markdown table: cost per step (a one-time cost once), share, rows."""
    out = ["| # | finding | severity | cost per step | share | rows |", "|---:|---|---|---:|---:|---:|"]
    for i, f in enumerate(t.findings, 1):
        share = pct(f.impact_pct) if f.impact_pct is not None else ""
        if f.impact_ns <= 0:
            per_step = "none"
        elif f.per_step_ns is not None:
            per_step = ms(f.per_step_ns)
        else:
            per_step = f"{ms(f.impact_ns)} {'once' if f.scope == 'cold' else 'in all'}"
        out.append(f"| {i} | {md(f.title)} | {f.severity} | {per_step} | {share} | {f.count} |")
    return out


def finding_markdown(i: int, f: Finding) -> list[str]:
    return _finding_lines(i, f, markdown=True)


def findings_markdown(t: TraceDiagnosis, top: int = TOP) -> list[str]:
    """The findings of one trace as Markdown: how the costs add up, the ranked table, the top blocks. The HTML
    report renders these very pieces (markdown-it-py)."""
    out = [md(COSTS_ADD_UP), "", *findings_table(t), ""]
    for i, f in enumerate(t.findings[:top], 1):
        out.extend(finding_markdown(i, f))
        out.append("")
    if together := together_sentence(t):
        out.extend([md(together), ""])
    return out


def _job_path_markdown(d: Diagnosis) -> list[str]:
    if not d.job_critical_path:
        return []
    return [md(JOB_PATH[0].upper() + JOB_PATH[1:]) + ":", "", *(f"- {md(line)}" for line in job_path_steps(d)), ""]


def render_markdown(d: Diagnosis, top: int = TOP) -> str:
    out = [f"# kineto-sql diagnosis: {md_code(d.target)}", ""]
    if d.names_straggler:
        title = "data imbalance that moves between ranks" if d.ranks_summary.get("moving") else "the straggler"
        out.extend([f"## Across ranks: {title}", "", md(d.ranks_summary.get("narration", "")), ""])
        out.extend(_job_path_markdown(d))
    for t in d.traces:
        rank = f" (rank {t.rank})" if t.rank is not None else ""
        out.append(f"## {md_code(t.source)}{rank}")
        out.append("")
        out.append(f"Capture: {md('; '.join(t.devices)) or 'no GPU in deviceProperties'}; engine {md(t.engine or 'n/a')}.")
        out.append("")
        if t.loss:
            out.append("**DATA LOSS** (loaded with --allow-loss): " + md("; ".join(t.loss)))
            out.append("")
        v = t.verdict
        out.append(f"**Verdict: {md(v.regime)}.** {md(reason(v))}.")
        if v.steps:
            out.append("")
            out.append("| step | step time | CPU busy | GPU busy | GPU occupancy |")
            out.append("|---:|---:|---:|---:|---:|")
            for s in v.per_step:
                occ = f"{s.gpu_occupancy_pct:.0f}%" if s.gpu_occupancy_pct is not None else "n/a"
                out.append(f"| {s.step} | {ms(s.dur_ns)} | {ms(s.cpu_busy_ns) if s.cpu_busy_ns is not None else 'n/a'} "
                           f"| {ms(s.gpu_busy_ns) if s.gpu_busy_ns is not None else 'n/a'} | {occ} |")
        out.append("")
        if t.findings:
            out.extend(findings_markdown(t, top))
        else:
            out.append("No detector fired.")
            out.append("")
        out.append("<details><summary>silent, skipped and loader notes</summary>")
        out.append("")
        out.append(md(_tail(t)).replace("\n", "\n\n"))
        out.append("")
        out.append("</details>")
        out.append("")
    if d.ranks_summary and not d.names_straggler:
        out.append("## Across ranks")
        out.append("")
        out.append(md(d.ranks_summary.get("narration", "")))
        out.append("")
    if not d.names_straggler:
        out.extend(_job_path_markdown(d))
    if d.failed_ranks:
        out.append("")
        out.append("## Rank files not loaded")
        out.append("")
        out.extend(f"- {md(failure)}" for failure in d.failed_ranks)
    return "\n".join(out).rstrip() + "\n"
