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
    # -11.7 vs -39.5 ms (+70%). The edit removes the GC passes exactly (485 and 489 ms in the 2 windows with
    # a full collection, 2.6-7.8 ms in the others). Without them the planted windows keep 15.8-83.8 ms of
    # other host work (median 51.6): 15.8-27.3 ms in the 4 windows right after a full collection, as in
    # every twin window (19.7-30.0, median 23.7), but 50.3-83.8 ms in the 6 windows of the three steps up
    # to each full collection. The excess (~30-55 ms a window) recurs with the GC cycle yet lies outside
    # every 'Python GC' event (the same 56-57 collections a window, 3.4-7.8 ms), in the step's own
    # allocation loop, as stalls: between two collections the loop takes ~170 us at the median, but the
    # slow windows hold 5-9 gaps of 1-4.7 ms (28-61 ms in all; 1-4 gaps, 4-17 ms, in the others), the
    # length of a scheduler tick: the thread was off the CPU. The trace cannot tie those stalls to GC (nor
    # tell them from a loaded machine), so no edit removes them.
    "gc_stall": ("catalog.gc_gil_stall", TARGET,
                 "6 of 10 planted windows carry 25-55 ms more non-GC host work than the twin's (median "
                 "51.6 vs 23.7 ms); the edit removes only the time inside the GC events"),
    # -108.8 vs -165.8 ms (+34%; the replay's -109.6 capped at the finding's claim). The edit removes the
    # DataLoader time (median 107.2 ms a window, twin 1.5 ms): that part is right. The rest of the measured change is outside the DataLoader: the planted
    # windows keep 64.0-98.0 ms (median 81.5) of model step, the twin's quiet windows 7.0-11.1 ms (median
    # of the steady ones 9.0). The same two SGD iterations; the difference is 2-6 single calls per planted
    # window that take 5-60 ms each (aten::mm, Optimizer.step, even _get_privateuse1_backend_name: the
    # thread was off the CPU on a 2-core machine at load 10-12), which the twin shows only in its first
    # windows, while its workers still decode. Nothing in the planted trace ties those stalls to the
    # DataLoader, so no edit removes them.
    "input_bound": ("catalog.input_bound", TARGET,
                    "the twin's model step is also 72 ms shorter (median 81.5 -> 9.0 ms outside the "
                    "DataLoader: off-CPU stalls of single calls), beyond the DataLoader time removed"),
    # -47.6 vs -28.4 ms (-68%; the replay's -51.0 capped at the finding's claim). The twin keeps
    # num_workers=0 and makes the collate cheaper (tensor ops, a lookup tensor): its DataLoader time is 2.1-30.5 ms a window (median 22.6) against the planted's
    # 29.1-77.3 (median 49.3), the rest of the step unchanged (median 69.7 vs 68.1 ms). The edit models
    # the fix the rule proposes (workers that keep up: the wait shrinks to zero), not a cheaper collate;
    # its cautious end (the shortest DataLoader time any planted window shows, 29.1 ms) gives -22.0 ms,
    # within 25% (test_measured_change_in_the_predicted_range).
    "collate_heavy_python": ("catalog.input_bound", TARGET,
                             "the twin's fix is a cheaper collate still in the main process (DataLoader "
                             "median 49.3 -> 22.6 ms), not a wait that shrinks to zero; the range's "
                             "cautious end holds"),
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


# ---------------------------------------------------------------- three captures a side, recorded on a quiet machine

RERUNS = PAIRS.parent / "reruns"

# scenario -> (the rule whose fix is the twin's knob, why it misses or None). golden/reruns/NAME_{planted,fixed}_rN
# were recorded in turn (planted r1, fixed r1, planted r2, ...) with torch 2.13 on CPU while nothing else ran:
# the off-CPU stalls that dominate the a10 pairs above are absent. The prediction is the median of the three
# planted captures' predictions; the measured change is the median of the fixed captures' median steps minus
# the planted ones'. Numbers when written: predicted vs measured change.
QUIET: dict[str, tuple[str, str | None]] = {
    # -12.01 (-11.61, -12.01, -12.66) vs -9.94 ms (19.44 -> 9.50): -21%
    "input_bound": ("catalog.input_bound", None),
    # -3.61 (-3.61, -3.42, -3.77) vs -4.53 ms (5.52 -> 0.99): +20%. The claim counts the small ops' own time;
    # the fix (fewer, larger ops) also removes the Python that issued them, so the real saving is a little
    # larger than the claimed one.
    "op_storm": ("catalog.small_op_storm", None),
    # -3.58 vs -2.64 ms (15.19 -> 12.54): -35%. The edit removes the GC passes (3.25-3.32 ms a step, median
    # per capture), and the twin's GC time is 0. But the twin's fix is gc.disable() while the loop still
    # makes 20k cyclic dicts a step: nothing frees them, so every allocation takes fresh memory, where the
    # planted loop reuses what the collections freed. Its step outside GC is longer in every capture: not
    # noise (test_the_gc_twin_pays_outside_the_gc_events: +0.96, +1.20, +0.74 ms in the three pairs recorded
    # in turn, every twin window above every planted window's non-GC time, against a spread of 0.66 ms between
    # the twin's own three capture medians). The planted trace holds no trace of that cost (the dicts it
    # would not free are freed in it), so no edit can size it; the prediction is the one for a fix that keeps
    # the collections out of the step without leaking (the rule's gc.freeze(), or gc.disable() with a
    # collection between steps).
    "gc_stall": ("catalog.gc_gil_stall", "the twin's gc.disable() leaks the loop's cyclic garbage: its step "
                 "outside GC is 0.74-1.20 ms longer in every capture pair; -3.58 predicted vs -2.64 ms measured"),
    # -5.06 vs -3.31 ms (10.36 -> 7.05): -53%. As for the a10 pair: the twin's fix is a cheaper collate still
    # in the main process (its DataLoader time 5.06 -> 1.95 ms, median of the captures' medians; the rest of
    # the step unchanged, 5.09 vs 5.02 ms but 2.9-9.0 ms window to window, which is why the step change,
    # -3.31, is not the DataLoader's -3.11), not a DataLoader that keeps up (the wait to zero, which the edit
    # models: the rule's first fix is worker processes). The trace cannot size a cheaper collate: the
    # planted __next__ is over 99% Python (the 12 events under it take 0.01-0.03 ms a call), and what a
    # tensor rewrite costs (the twin's 207 events under it, 0.53-0.75 ms, plus its Python) is in no event
    # of it (test_the_collate_twin_keeps_a_cheaper_dataloader). Its cautious end (the shortest DataLoader time any
    # window shows) is near 0 here, every window's wait being ~5 ms: the measured change lies in the range
    # (test_quiet_collate_change_in_the_predicted_range), at neither end.
    "collate_heavy_python": ("catalog.input_bound", "the twin's fix is a cheaper collate in the main process "
                             "(DataLoader 5.06 -> 1.95 ms), not a wait that shrinks to zero: -5.06 predicted vs "
                             "-3.31 ms measured"),
}


def _quiet_params():
    for name, (rule, why) in QUIET.items():
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        yield pytest.param(name, rule, "fixed", "r", id=name, marks=marks)
    for name, (rule, why) in PROPOSED.items():
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        yield pytest.param(name, rule, "proposed", "p", id=f"{name}-proposed", marks=marks)


# scenario -> the rule whose own fix the `proposed` variant makes (golden.common.PROPOSED; Scenario.proposed
# says what it does). golden/reruns/NAME_{planted,proposed}_pN were recorded in turn (planted p1, proposed p1,
# planted p2, ...) with torch 2.13 on CPU while nothing else ran. Numbers when written: predicted vs measured
# change.
PROPOSED: dict[str, tuple[str, str | None]] = {
    # -3.47 (-3.80, -3.47, -3.45) vs -3.62 ms (15.19 -> 11.57): +4%. GC off and records without the cycle:
    # nothing to collect, nothing leaks, and the step keeps its other work (unlike the fixed twin's
    # gc.disable() alone, above).
    "gc_stall": ("catalog.gc_gil_stall", None),
    # -4.95 (-4.93, -5.03, -4.95) vs -2.90 ms (10.23 -> 7.33): -71%. Two workers on the 2-core recording
    # machine: the DataLoader time falls 5.03 -> 1.36 ms (median of the captures' medians), not to zero
    # (each batch still comes through a worker's queue), and the rest of the step grows 5.20 -> 6.06 ms (the
    # workers take CPU from a step whose compute runs on the same 2 cores). The edit models workers on free
    # cores; a CPU capture does not say how many cores are free. The range holds it
    # (test_proposed_collate_change_in_the_predicted_range).
    "collate_heavy_python": ("catalog.input_bound",
                             "two DataLoader workers on the 2-core recording machine: the DataLoader time falls "
                             "5.03 -> 1.36 ms, not to zero, and the rest of the step grows 5.20 -> 6.06 ms (the "
                             "workers share the step's cores): -4.95 predicted vs -2.90 ms measured"),
}


@pytest.mark.parametrize(("name", "rule", "twin", "tag"), _quiet_params())
def test_prediction_on_three_quiet_captures_a_side(loaded, diagnosed, name, rule, twin, tag):
    import statistics

    sides = {v: [RERUNS / f"{name}_{v}_{tag}{i}.json.gz" for i in (1, 2, 3)] for v in ("planted", twin)}
    predictions = []
    for path in sides["planted"]:
        finding = next(f for f in diagnosed(path).findings if f.query_id == rule)
        assert finding.prediction is not None
        predictions.append(-finding.prediction["saving_ns"])
    before, after = (statistics.median(median_step(load_graph(loaded(p))) for p in sides[v])
                     for v in ("planted", twin))
    predicted_change, measured_change = statistics.median(predictions), after - before
    assert measured_change < 0, "the fix makes the step faster"
    assert abs(predicted_change - measured_change) <= TARGET * abs(measured_change), \
        (name, predicted_change / 1e6, measured_change / 1e6)


def _per_capture(loaded, name: str, variant: str, tag: str) -> list[list[tuple[int, int]]]:
    """Per quiet capture r1..r3: (width, ns in nodes tagged `tag`) of each steady window."""
    from kineto_sql.whatif.predict import steady_windows

    out = []
    for i in (1, 2, 3):
        graph = load_graph(loaded(RERUNS / f"{name}_{variant}_r{i}.json.gz"))
        out.append([(graph.windows[w][1], int(graph.dur[(graph.window == w) & (graph.tag == tag)].sum()))
                    for w in steady_windows(graph)])
    return out


def _ms(ns) -> float:
    return round(ns / 1e6, 2)


def test_the_gc_twin_pays_outside_the_gc_events(loaded):
    # why the quiet gc_stall pair misses: the twin (gc.disable(), no GC event) is slower outside GC than the
    # planted side in each pair recorded in turn, and every twin window is slower than every planted window's
    # non-GC time; the twin's three capture medians spread 0.66 ms, less than the smallest of those excesses
    import statistics

    planted = _per_capture(loaded, "gc_stall", "planted", "gc")
    fixed = _per_capture(loaded, "gc_stall", "fixed", "gc")
    assert all(gc == 0 for capture in fixed for _, gc in capture)
    assert [_ms(statistics.median(gc for _, gc in c)) for c in planted] == [3.25, 3.25, 3.32]
    outside = [[w - gc for w, gc in c] for c in planted]
    twin = [[w for w, _ in c] for c in fixed]
    excess = [_ms(statistics.median(t) - statistics.median(o)) for t, o in zip(twin, outside)]
    assert excess == [0.96, 1.2, 0.74]
    assert min(min(t) for t in twin) > max(max(o) for o in outside)
    medians = [statistics.median(t) for t in twin]
    assert _ms(max(medians) - min(medians)) == 0.66 < min(excess)


def test_the_collate_twin_keeps_a_cheaper_dataloader(loaded):
    # why the quiet collate pair misses: the twin's DataLoader does not shrink to zero (the edit's full end)
    # but to 39% of the planted's; outside the DataLoader the step is unchanged at the median and noisy per
    # window (2.9-9.0 ms), so the step's change differs from the DataLoader's by the noise
    import statistics

    sides = {v: _per_capture(loaded, "collate_heavy_python", v, "dataloader") for v in ("planted", "fixed")}
    loader = {v: statistics.median(statistics.median(d for _, d in c) for c in cs) for v, cs in sides.items()}
    assert (_ms(loader["planted"]), _ms(loader["fixed"])) == (5.06, 1.95)
    rest = {v: [w - d for c in cs for w, d in c] for v, cs in sides.items()}
    assert (_ms(statistics.median(rest["planted"])), _ms(statistics.median(rest["fixed"]))) == (5.09, 5.02)
    assert (_ms(min(rest["fixed"])), _ms(max(rest["fixed"]))) == (2.93, 9.03)


def _collate_ranges(loaded, diagnosed, twin: str, tag: str) -> tuple[int, list]:
    """(measured saving: median of the planted captures' median steps less the twin's; each planted capture's
    range of the predicted saving) over golden/reruns/collate_heavy_python_{planted,TWIN}_{TAG}1..3."""
    import statistics

    ranges = []
    for i in (1, 2, 3):
        finding = next(f for f in diagnosed(RERUNS / f"collate_heavy_python_planted_{tag}{i}.json.gz").findings
                       if f.query_id == "catalog.input_bound")
        ranges.append(finding.prediction["saving_range_ns"])
    before, after = (statistics.median(median_step(load_graph(loaded(RERUNS / f"collate_heavy_python_{v}_{tag}{i}.json.gz")))
                                       for i in (1, 2, 3)) for v in ("planted", twin))
    return before - after, ranges


def test_quiet_collate_change_in_the_predicted_range(loaded, diagnosed):
    # each planted capture's range of the saving (its cautious end: the shortest DataLoader time any window
    # shows, ~5 ms in every window, so near 0; its full end: the wait removed) holds the measured 3.31 ms
    measured, ranges = _collate_ranges(loaded, diagnosed, "fixed", "r")
    assert _ms(measured) == 3.31
    # (the replays of captures 1 and 2 remove 5.26 and 5.06 ms, more than the 5.12 and 5.02 ms a step their
    # findings claim: capped at the claims)
    assert [[_ms(x) for x in r] for r in ranges] == [[0.26, 5.12], [0.12, 5.02], [0.0, 4.98]]
    assert all(low <= measured <= high for low, high in ranges)


def test_proposed_collate_change_in_the_predicted_range(loaded, diagnosed):
    # the workers' pair misses the full edit's -4.95 ms, but every planted capture's range of the saving (its
    # cautious end: the shortest DataLoader time any window shows; its full end: the wait removed) holds the
    # measured 2.90 ms
    measured, ranges = _collate_ranges(loaded, diagnosed, "proposed", "p")
    assert _ms(measured) == 2.9
    assert [[_ms(x) for x in r] for r in ranges] == [[0.04, 4.93], [0.07, 5.03], [0.0, 4.95]]
    assert all(low <= measured <= high for low, high in ranges)
