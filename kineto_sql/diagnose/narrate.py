"""The words of a diagnosis, written once: every format (text, Markdown, HTML, the JSON `narration`) lays
out the same block per finding and the same sentence on how the costs add up; none writes its own."""
from __future__ import annotations

from dataclasses import dataclass

from kineto_sql.catalog import spec as catalog
from kineto_sql.errors import QueryError
from kineto_sql.whatif.annotate import sentence as whatif_sentence

# True since claims are resolved per window (kineto_sql/diagnose/claims.py): no two findings claim the same
# ledger time, in any window; the predicted savings are separate replays of the dependency graph.
COSTS_ADD_UP = ("Each finding's cost is step-ledger time that no other finding claims (claims are resolved "
                "per step window), so the costs add up to at most the time they are drawn from. The "
                "\"fixing this\" predictions are separate replays: they do not add up; \"top fixes together\" "
                "replays the top fixes at once.")

WHY, DO, FIXING, CHECK, REPRODUCE, REFERENCE = ("why we think so", "what to do", "fixing this", "how to check",
                                                "reproduce (each line is one command)", "reference")


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
        return ""
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


def step_summary(verdict) -> str:
    """'6 steps, median step 76.8 ms, GPU busy 84%' (one step is one step)."""
    occ = f", GPU busy {verdict.gpu_occupancy_pct:.0f}%" if verdict.gpu_occupancy_pct is not None else ""
    steps = f"{verdict.steps} step{'s' if verdict.steps != 1 else ''}"
    return f"{steps}, median step {ms(verdict.median_step_ns)}{occ}"


def reason(verdict) -> str:
    """The verdict's sentence without the regime it starts with (every format prints the regime before it)."""
    said = verdict.regime_reason.removeprefix(f"{verdict.regime}: ")
    return said[:1].upper() + said[1:]


def cost(finding) -> str:
    """How much: per step (never summed over steps), its share, and the ledger buckets it was drawn from."""
    if finding.impact_ns <= 0:
        if not _claims_step_time(finding.query_id):
            return "no step time of its own; it changes how the trace must be read"
        return ("no step time of its own in this trace: the time it explains is claimed by a finding above it, "
                "or this capture does not record it")
    share = f" ({pct(finding.impact_pct)} of the {share_of(finding)})" if finding.impact_pct is not None else ""
    if finding.scope == "cold":
        amount = f"{ms(finding.impact_ns)} once, in the cold start{share}"
    elif finding.per_step_ns is not None:
        amount = f"{ms(finding.per_step_ns)} per step{share}"
    else:
        amount = f"{ms(finding.impact_ns)} over the capture{share}"
    drawn = [b for b, ns in sorted(finding.claimed.items(), key=lambda kv: -kv[1]) if ns > 0]
    return amount + (f", from the step ledger's {', '.join(drawn)}" if drawn else "")


def _claims_step_time(query_id: str) -> bool:
    """Whether the rule draws its cost from step-ledger buckets (its header's `claims:`); a rule that claims
    none (a capture's validity, a missing annotation) changes how the trace is read, not the step."""
    try:
        return bool(catalog.load_catalog().get(query_id).claims)
    except QueryError:  # a user's rule outside the installed catalog
        return False


def _where(finding) -> str:
    where = finding.where
    parts = [_steps(where.steps)]
    if where.python_lines:
        parts.append(f"at {where.python_lines[0]}")
    elif where.ops:
        parts.append("in " + ", ".join(where.ops[:3]))
    said = " ".join(p for p in parts if p)
    return f"Seen {said}." if said else ""


@dataclass(frozen=True)
class Block:
    """One finding in words: a head (title, severity, cost) and labelled lines, then the commands."""

    title: str
    severity: str
    cost: str
    lines: tuple[tuple[str, str], ...]
    commands: tuple[str, ...]
    lead: str = ""  # the predicted step of the fix, when it was replayed or bounded

    def plain(self) -> str:
        """The block as one paragraph (the JSON `narration`), led by what the fix buys when that is known."""
        said = " ".join(f"{label[0].upper()}{label[1:]}: {_sentence(text)}" for label, text in self.lines)
        lead = f"{_sentence(self.lead[:1].upper() + self.lead[1:])} " if self.lead else ""
        return f"{lead}{_sentence(f'{self.title}: {self.cost}')} {said}"


def block(finding) -> Block:
    """What, how much per step, why we think so, what to do, what fixing it buys, how to check, the reference."""
    said = (finding.cross_rank_note, *finding.evidence[:1])  # in a rank directory the cross-rank reading first
    why = " ".join(p for p in (*(_sentence(e) for e in said if e), _where(finding)) if p)
    lines = [(WHY, why or "the rule's rows hold the numbers")]
    if finding.fix:
        lines.append((DO, finding.fix))
    if buys := whatif_sentence(finding.prediction):
        lines.append((FIXING, buys.removeprefix(f"{FIXING}: ")))
    if finding.confirming:
        lines.append((CHECK, finding.confirming))
    lines.append((REFERENCE, f"{finding.catalog_row}; rule {finding.id_version}"))
    lead = (finding.prediction or {}).get("headline") or ""
    return Block(finding.title, finding.severity, cost(finding), tuple(lines), tuple(finding.reproduce), lead)


def narrate(finding) -> str:
    return block(finding).plain()
