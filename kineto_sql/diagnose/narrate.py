"""Plain-words paragraphs generated from a finding's numbers (the seed's exercise 2: five sentences that
name the catalog row)."""
from __future__ import annotations


def ms(ns: int | None) -> str:
    if ns is None:
        return "an unknown time"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e3:.0f} us"


def pct(value: float | None) -> str:
    """A share that stays readable when small: 12.5%, 0.42%, 0.021%."""
    if value is None:
        return "n/a"
    if value >= 1 or value == 0:
        return f"{value:.1f}%"
    return f"{value:.2g}%"


def _steps(steps: tuple[int, ...]) -> str:
    if not steps:
        return "outside any ProfilerStep"
    if len(steps) == 1:
        return f"in step {steps[0]}"
    if list(steps) == list(range(steps[0], steps[-1] + 1)):
        return f"in every step from {steps[0]} to {steps[-1]}"
    return "in steps " + ", ".join(str(s) for s in steps[:8]) + ("..." if len(steps) > 8 else "")


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def share_of(finding) -> str:
    """What a finding's impact_pct is a share of, in words."""
    if getattr(finding, "scope", "steady") == "cold":
        return "capture windows, one-time"
    if getattr(finding, "of_capture", False):
        return "whole capture"
    return "steady step time"


def narrate(finding) -> str:
    """Five sentences: what and how much, the evidence, the catalog row, how to confirm, what to do."""
    claims = getattr(finding, "claims", ())
    share = (f" ({pct(finding.impact_pct)} of the {share_of(finding)})"
             if finding.impact_pct is not None else "")
    source = f", claimed from the step ledger's {', '.join(claims)}" if claims and finding.impact_ns > 0 else ""
    cost = (f"costs {ms(finding.impact_ns)}{share}{source}" if finding.impact_ns > 0
            else "has no direct time cost but changes how the trace must be read")
    first = (f"{finding.title} {cost}, seen {finding.count} time{'s' if finding.count != 1 else ''} "
             f"{_steps(finding.where.steps)}.")
    evidence = _sentence(finding.evidence[0]) if finding.evidence else "The detector's rows hold the numbers."
    where = ""
    if finding.where.python_lines:
        where = f" The Python line is {finding.where.python_lines[0]}."
    elif finding.where.ops:
        where = f" The op involved is {finding.where.ops[0]}."
    row = f"This is the catalog row {finding.catalog_row}: {_sentence(finding.signature) or 'see its header.'}"
    confirm = f"To confirm, {_sentence(finding.confirming[:1].lower() + finding.confirming[1:])}" \
        if finding.confirming else "Confirm it in the rows of the query below."
    fix = f"Fix direction: {_sentence(finding.fix)}" if finding.fix else ""
    return " ".join(part for part in (first, evidence + where, row, confirm, fix) if part)
