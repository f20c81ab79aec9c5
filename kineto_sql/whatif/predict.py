"""Predicted step time after a fix: replay the edited graph of every steady window and compare medians."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kineto_sql.whatif.edits import EDITS, combine
from kineto_sql.whatif.graph import Graph
from kineto_sql.whatif.replay import replay

REPLAY = "replay"
UPPER_BOUND = "upper bound"


@dataclass(frozen=True)
class Prediction:
    """What fixing one finding (or several together) buys per step."""

    rules: tuple[str, ...]
    change: str
    # `replay` (the edited graph was replayed) or `upper bound` (the claimed time, as if it vanished and
    # nothing else moved: the graph could not be built or the edit found nothing to act on)
    basis: str
    measured_step_ns: int
    predicted_step_ns: int
    # the range of the saving: the cautious edit's and the full edit's
    saving_low_ns: int
    saving_high_ns: int
    reason: str = ""
    # the step time the findings claim, which caps the saving (None: not given, no cap)
    claimed_per_step_ns: int | None = None

    @property
    def saving_ns(self) -> int:
        return self.measured_step_ns - self.predicted_step_ns

    @property
    def saving_pct(self) -> float | None:
        return round(100.0 * self.saving_ns / self.measured_step_ns, 1) if self.measured_step_ns else None

    def to_json(self) -> dict:
        return {"rules": list(self.rules), "change": self.change, "basis": self.basis,
                "measured_step_ns": self.measured_step_ns, "predicted_step_ns": self.predicted_step_ns,
                "saving_ns": self.saving_ns, "saving_pct": self.saving_pct,
                "saving_range_ns": [self.saving_low_ns, self.saving_high_ns], "reason": self.reason,
                "claimed_per_step_ns": self.claimed_per_step_ns}


def steady_windows(graph: Graph) -> list[int]:
    """The windows a step time is the median of: the steady ones with a main-thread end (all of them when
    every window is cold)."""
    ended = {int(w) for w in graph.window[graph.is_end]}
    steady = [w for w in sorted(ended) if not graph.windows[w][3]]
    return steady or sorted(ended)


def median_step(graph: Graph, widths: dict[int, int] | None = None) -> int:
    windows = steady_windows(graph)
    if widths is None:
        return int(np.median([graph.windows[w][1] for w in windows]))
    return int(np.median([widths[w] for w in windows]))


def why_not(graph: Graph, has_device: bool) -> str:
    """Why no graph can stand for this trace ('' when one can)."""
    if graph.n == 0 or not graph.is_end.any():
        return "no iteration window has a main thread to replay"
    if has_device and not (graph.kind == "device").any():
        return "the device work carries no correlation to a launch, so the host and the device cannot be linked"
    return ""


def predict(graph: Graph, rules, has_device: bool = False, claimed_per_step_ns: int | None = None) -> Prediction:
    """The predicted median step after the fixes of `rules` (applied together). `claimed_per_step_ns`: the
    step time the findings claim (their ledger time per step, which no other finding claims). A fix removes
    at most the time its finding explains, so a replayed saving above the claim is capped at it: an edit
    selects every node of its kind (every host read of a tensor value, say) where the finding may count
    fewer, and a stall that happened to fall inside one such node (a CPU capture's 40 ms pause inside a
    1 us scalar read) is not time the fix removes."""
    rules = tuple(rules)
    change = "; ".join(dict.fromkeys(EDITS[r].change for r in rules if r in EDITS)) or "the claimed time vanishes"
    reason = why_not(graph, has_device)
    measured = median_step(graph) if not reason else 0
    unknown = [r for r in rules if r not in EDITS]
    if not reason and unknown:
        reason = f"no graph edit is defined for {', '.join(unknown)}"
    if not reason:
        high_graph, touched = combine(rules, graph, low=False)
        if touched == 0:
            reason = "the fix has nothing to act on in this trace's graph"
    if reason:
        return _upper_bound(rules, change, measured, claimed_per_step_ns, reason)
    low_graph, _ = combine(rules, graph, low=True)
    high = median_step(graph, replay(high_graph).window_durations(high_graph))
    # most fixes have one outcome: their cautious graph is the same graph, replayed once
    low = high if _same(low_graph, high_graph) else median_step(graph, replay(low_graph).window_durations(low_graph))
    # a fix never lengthens the step: an edited replay a few us (or a collective's wait) past the measured
    # step is the replay's own drift, not a cost of the fix
    high = min(high, measured)
    saving_low, saving_high = max(measured - low, 0), measured - high
    if claimed_per_step_ns is not None and saving_high > claimed_per_step_ns:
        cap = max(claimed_per_step_ns, 0)
        reason = (f"the replay removes {saving_high / 1e6:.1f} ms a step, more than the {cap / 1e6:.1f} ms the "
                  "finding claims: capped at the claim")
        return Prediction(rules, change, REPLAY, measured, measured - cap, min(saving_low, cap), cap, reason,
                          claimed_per_step_ns)
    return Prediction(rules, change, REPLAY, measured, high, saving_low, saving_high, "", claimed_per_step_ns)


def _same(a: Graph, b: Graph) -> bool:
    """The two graphs replay the same (same nodes' times, same edges)."""
    return all(x is y or np.array_equal(x, y) for x, y in
               ((a.dur, b.dur), (a.ready, b.ready), (a.src, b.src), (a.dst, b.dst), (a.gap, b.gap), (a.to_end, b.to_end)))


def _upper_bound(rules, change, measured, claimed, reason) -> Prediction:
    predicted = max(measured - (claimed or 0), 0)
    return Prediction(rules, change, UPPER_BOUND, measured, predicted, 0, measured - predicted, reason, claimed)
