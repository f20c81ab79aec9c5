"""Predictions against real fixes, on before/after pairs with 10 steady steps a side (golden/pairs): diagnose
the planted trace, take the predicted median step after fixing its planted fault, and compare the predicted
change with the fixed twin's measured median change. The target is 25% of the measured change; a pair that
misses it is a strict xfail that says why."""
from __future__ import annotations

from pathlib import Path

import pytest

from kineto_sql.whatif import load_graph
from kineto_sql.whatif.predict import REPLAY, median_step

PAIRS = Path(__file__).resolve().parents[1] / "golden" / "pairs"
TARGET = 0.25

# pair -> (the rule whose fix is the twin's knob, tolerance on the relative error, why it misses or None).
# Numbers when written (torch 2.13 CPU, recorded on a loaded 2-core machine): predicted change vs measured
# median change.
CASES: dict[str, tuple[str, float, str | None]] = {
    # -11.7 vs -39.5 ms (+70%). The edit removes the GC passes exactly (485 and 489 ms in 2 of 10 windows,
    # 3-8 ms in the others), but 4 of the planted capture's other windows take 55-76 ms of plain host work
    # against 16-27 ms in the rest and 20-30 ms in every window of the twin: the planted median moves with
    # those, which no GC pause explains (run-to-run variation on a shared machine, or allocator state after
    # the collections), so the twin's median is below what removing GC can give
    "gc_stall": ("catalog.gc_gil_stall", TARGET,
                 "4 of 10 planted windows carry 30-50 ms of non-GC host work the twin does not: the median "
                 "moves with them, not with the GC passes the edit removes"),
    # -109.6 vs -171.2 ms (+36%). The edit removes exactly the DataLoader time (94-131 ms a window); the
    # twin's model step is 3x faster as well (host.ops 18 vs 55 ms, host.python 6.5 vs 25 ms per window),
    # which no DataLoader change explains: with num_workers=0 the decode's convolutions and FFTs run in the
    # main process just before the model, and the step after them runs slower
    "input_bound": ("catalog.input_bound", TARGET,
                    "the twin's model compute is also 3x faster (55 -> 18 ms of ATen ops per step), beyond "
                    "the DataLoader time the edit removes"),
    # -51.0 vs -28.4 ms (-80%). The twin's two workers collate on the same 2 cores the main process runs
    # on: its DataLoader wait shrinks but its step keeps 92 ms; the cautious end of the range (-22.0 ms: the
    # shortest DataLoader time any planted window shows) is within 25% and the measured change lies in
    # the range (test_measured_change_in_the_predicted_range)
    "collate_heavy_python": ("catalog.input_bound", TARGET,
                             "the twin's DataLoader workers share the 2 cores with the step: a wait that "
                             "shrinks to zero overpredicts; the range's cautious end holds"),
}


def _pair(name: str) -> tuple[Path, Path]:
    return PAIRS / f"{name}_planted_a10.json.gz", PAIRS / f"{name}_fixed_a10.json.gz"


def _changes(loaded, diagnosed, name: str, rule: str) -> tuple[dict, int]:
    planted, fixed = _pair(name)
    finding = next(f for f in diagnosed(planted).findings if f.query_id == rule)
    p = finding.prediction
    assert p is not None and p["basis"] == REPLAY
    graph = load_graph(loaded(fixed))
    assert len({int(w) for w in graph.window[graph.is_end]}) >= 8, "8+ steady windows a side"
    return p, median_step(graph) - p["measured_step_ns"]


def _params():
    for name, (rule, tolerance, why) in CASES.items():
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        yield pytest.param(name, rule, tolerance, id=name, marks=marks)


@pytest.mark.parametrize(("name", "rule", "tolerance"), _params())
def test_prediction_within_tolerance_of_the_measured_change(loaded, diagnosed, name, rule, tolerance):
    p, measured_change = _changes(loaded, diagnosed, name, rule)
    predicted_change = -p["saving_ns"]
    assert measured_change < 0, "the fix makes the step faster"
    assert abs(predicted_change - measured_change) <= tolerance * abs(measured_change), \
        (name, predicted_change / 1e6, measured_change / 1e6)


def test_measured_change_in_the_predicted_range(loaded, diagnosed):
    # collate_heavy_python: range of the saving 22.0..51.0 ms, measured 28.4 ms
    p, measured_change = _changes(loaded, diagnosed, "collate_heavy_python", "catalog.input_bound")
    low, high = p["saving_range_ns"]
    assert low <= -measured_change <= high
    assert abs(low + measured_change) <= TARGET * abs(measured_change)
