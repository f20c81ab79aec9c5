"""The diff verdict with confidence: the bootstrap's coverage, builder pairs with a known change and known
noise, the comparability checks, the CI gate (exit codes and its one line) and named baselines; then the
corpus pair resnet50 nw0 -> nw4 and the golden planted / fixed pairs."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner

from kineto_sql.diff import baselines
from kineto_sql.diff import verdict as V
from kineto_sql.diff import traces as D
from kineto_sql.cli.main import cli
from kineto_sql.diff.stats import Bootstrap, Interval, NestedBootstrap
from tests.conftest import CORPUS, GOLDEN
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep, PythonFrame

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
# Known noise: +-5% of the step, median 0, so the true median step is the base width exactly.
NOISE = (0.0, -0.04, 0.03, -0.02, 0.05, -0.05, 0.02)
NOISE2 = (0.01, -0.03, 0.04, 0.0, -0.05, 0.02, -0.01)    # another draw, also median 0


def steps(widths_us, loader_us=300.0, kernel_us=100.0, first_step=1, launches_only=False, stack=False,
          shapes=False, device_name=None) -> KinetoTrace:
    """One ProfilerStep per width: a DataLoader annotation of `loader_us`, aten::mm launching one kernel of
    `kernel_us`, aten::relu of 50 us; the rest of the step is idle host time (noise goes there)."""
    events = []
    t0 = 0.0
    for i, width in enumerate(widths_us):
        mm_args = {"Input Dims": [[64, 64], [64, 64]]} if shapes else {}
        events += [
            ProfilerStep(first_step + i, ts_us=t0, dur_us=width),
            CpuOp(LOADER, ts_us=t0 + 1, dur_us=loader_us, cat="user_annotation"),
            CpuOp("aten::mm", ts_us=t0 + loader_us + 2, dur_us=150, args=mm_args),
            Launch(correlation=1 + i, ts_us=t0 + loader_us + 10, dur_us=5),
            CpuOp("aten::relu", ts_us=t0 + loader_us + kernel_us + 30, dur_us=50),
        ]
        if launches_only:   # two launches a step, no device activity: 14 unmatched launches in 7 steps
            events.append(Launch(correlation=1000 + i, ts_us=t0 + loader_us + 16, dur_us=5))
        else:
            events.append(Kernel(correlation=1 + i, ts_us=t0 + loader_us + 20, dur_us=kernel_us, name="k"))
        if stack:
            events.append(PythonFrame("train.py(12): step", ts_us=t0 + 0.5, dur_us=width - 1))
        t0 += width
    meta = {"deviceProperties": [{"id": 0, "name": device_name}]} if device_name else {}
    return KinetoTrace(events, metadata=meta)


def widths(base: float, noise=NOISE, scale: float = 1.0) -> list[float]:
    return [base * (1 + scale * n) for n in noise]


def pair(tmp_path, before: KinetoTrace, after: KinetoTrace) -> D.DiffReport:
    b = D.side_file(before.write(tmp_path, "before.json.gz"))
    a = D.side_file(after.write(tmp_path, "after.json.gz"))
    return D.build_diff(b, a)


# ------------------------------------------------------------------------------------------ bootstrap


def test_bootstrap_covers_a_known_change_at_about_its_level():
    """300 simulated pairs, -20% change, lognormal noise: the 95% interval covers -20% in 90% of pairs or
    more (measured: 90% at 3 windows a side, 96% at 8)."""
    rng = np.random.default_rng(7)
    for n, floor in ((3, 0.85), (8, 0.92)):
        covered = 0
        for trial in range(300):
            b, a = 1000 * np.exp(rng.normal(0, 0.05, n)), 800 * np.exp(rng.normal(0, 0.05, n))
            iv = Bootstrap(n, n, resamples=2000, seed=trial).relative_change(b, a)
            covered += iv.low <= -20.0 <= iv.high
        assert covered / 300 >= floor, (n, covered)


def test_bootstrap_is_deterministic_and_exact_on_constant_samples():
    b, a = [10.0, 11.0, 9.0, 10.5], [8.0, 8.5, 7.5, 8.2]
    assert Bootstrap(4, 4).relative_change(b, a) == Bootstrap(4, 4).relative_change(b, a)
    # no spread on either side: the interval is the point
    assert Bootstrap(3, 3).difference([5, 5, 5], [3, 3, 3]) == Interval(-2.0, -2.0, -2.0)
    assert Interval(1.0, -0.5, 2.0).beyond_noise is False and Interval(-3.0, -4.0, -0.1).beyond_noise is True


# ------------------------------------------------------------------------------------------ builder pairs


def test_known_host_side_speedup_is_covered_and_said(tmp_path):
    """-20% step (1000 -> 800 us, +-5% noise), the DataLoader 300 -> 100 us: the interval covers -20% and
    leaves 0 out; idle.dataloader moved -200 us exactly; device busy did not move: host-side."""
    report = pair(tmp_path, steps(widths(1000)), steps(widths(800, NOISE2), loader_us=100))
    v = report.verdict
    assert (v.before_windows, v.after_windows, v.median_before_ns, v.median_after_ns) == (7, 7, 1_000_000, 800_000)
    assert v.step.point == pytest.approx(-20.0)
    assert v.step.low < -20.0 < v.step.high < 0
    assert v.buckets["idle.dataloader"] == Interval(-200_000.0, -200_000.0, -200_000.0)
    assert v.groups["busy"] == Interval(0.0, 0.0, 0.0)
    assert v.checks == []
    lo, hi = sorted((abs(v.step.low), abs(v.step.high)))
    assert report.headline.startswith(f"AFTER is faster by 20.0% (95% CI {lo:.1f}-{hi:.1f}%; 7 vs 7 steady "
                                      "windows): median step 1.0 ms -> 800 us (-20%)")
    assert "Moved beyond noise: idle.dataloader -200 us (95% CI -200..-200 us)" in report.headline
    # the interval is over windows of one capture per side, and says so (run-to-run variation is outside it)
    assert report.headline.endswith("One capture per side: the interval covers step-to-step noise inside each "
                                    "capture, not run-to-run variation; record each side more than once before "
                                    "trusting a small change.")
    assert "device busy +0 us (95% CI +0..+0 us)" in report.headline
    assert "the saving is host-side; the largest host change is " \
           "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ -200 us." in report.headline


def test_known_device_side_slowdown(tmp_path):
    """The kernel 100 -> 400 us and the step 1000 -> 1300 us: device busy +300 us carries it, device idle
    (900 us at the median on both sides) stays inside the noise."""
    report = pair(tmp_path, steps(widths(1000)), steps(widths(1300, NOISE2), kernel_us=400))
    v = report.verdict
    assert v.step.point == pytest.approx(30.0) and v.step.low < 30.0 < v.step.high and v.step.low > 0
    assert v.groups["busy"] == Interval(300_000.0, 300_000.0, 300_000.0)
    assert v.groups["idle"].point == pytest.approx(0.0) and not v.groups["idle"].beyond_noise
    assert report.headline.startswith("AFTER is slower by 30.0% (95% CI ")
    assert "the loss is device-side." in report.headline


def test_no_change_pair_says_no_change_beyond_noise(tmp_path):
    report = pair(tmp_path, steps(widths(1000)), steps(widths(1000, NOISE2)))
    v = report.verdict
    assert v.step.point == pytest.approx(0.0) and v.step.low < 0 < v.step.high
    assert report.headline.startswith(f"No change beyond noise (+0.0%, 95% CI {v.step.low:+.1f}..{v.step.high:+.1f}%; "
                                      "7 vs 7 steady windows)")
    assert "Why: the step did not move beyond noise" in report.headline


def test_small_true_change_inside_the_noise_is_covered_but_not_claimed(tmp_path):
    """+2% with +-10% noise: the interval covers the truth (+2%) and 0, so no change is claimed."""
    report = pair(tmp_path, steps(widths(1000, scale=2)), steps(widths(1020, NOISE2, scale=2)))
    s = report.verdict.step
    assert s.point == pytest.approx(2.0) and s.low < 0 < 2.0 < s.high
    assert report.headline.startswith("No change beyond noise (+2.0%")


# ------------------------------------------------------------------------------------------ comparability


def test_flags_settings_and_schedule_but_still_judges(tmp_path):
    before = steps(widths(1000), shapes=True)
    after = steps(widths(800, NOISE2), loader_us=100, first_step=10, stack=True)
    v = pair(tmp_path, before, after).verdict
    assert [(c.name, c.blocking) for c in v.checks] == [("schedule", False), ("settings", False)]
    assert v.checks[0].sentence == ("Another schedule shape: BEFORE captured ProfilerStep#1-#7 (7 windows), "
                                    "AFTER ProfilerStep#10-#16 (7 windows).")
    assert v.checks[1].sentence == ("Profiler settings that change host cost differ (with_stack off -> on, "
                                    "record_shapes on -> off): part of the change may be the profiler's own "
                                    "overhead.")
    assert v.comparable and v.step.beyond_noise
    assert (V.gate(v, 5).judged, V.gate(v, 5).exit_code) == (False, V.NOT_JUDGED)
    result = V.gate(v, 5, noise_floor=2)
    assert (result.judged, result.failed, result.exit_code) == (True, False, 0)


def test_blocking_checks_name_the_side(tmp_path):
    # AFTER holds 2 steps: 2 steady windows (a first step is cold only when one-time work fills it)
    short = pair(tmp_path, steps(widths(1000)), steps([800, 810], loader_us=100)).verdict
    assert [c.sentence for c in short.checks] == [
        "AFTER is too short: 2 steady windows in ProfilerStep#1-#2 (2 windows); 3 are needed for an interval.",
        "Another schedule shape: BEFORE captured ProfilerStep#1-#7 (7 windows), AFTER ProfilerStep#1-#2 (2 windows)."]
    assert short.step is None
    devices = pair(tmp_path, steps(widths(1000), device_name="NVIDIA A100-SXM4-80GB"),
                   steps(widths(1300), device_name="NVIDIA H100 80GB HBM3")).verdict
    assert [c.sentence for c in devices.checks] == [
        "Not the same device: BEFORE ran on NVIDIA A100-SXM4-80GB, AFTER on NVIDIA H100 80GB HBM3."]
    assert devices.step.beyond_noise and not devices.comparable
    # 14 launches, no device activity: catalog.capture_validity's lost GPU activity
    lost = pair(tmp_path, steps(widths(1000)), steps(widths(1300), launches_only=True)).verdict
    assert lost.checks[0].name == "capture_validity" and lost.checks[0].blocking
    assert lost.checks[0].sentence.startswith("AFTER's capture is not valid: ")


# ------------------------------------------------------------------------------------------ the gate


def _write(tmp_path, **traces):
    return {name: str(trace.write(tmp_path, f"{name}.json.gz")) for name, trace in traces.items()}


def _gate_line(result) -> str:
    """The gate's one line on stderr, without the `error: ` every non-zero exit's line starts with (a passed
    gate exits 0 and its line has none)."""
    prefix = "error: " if result.exit_code else ""
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"{prefix}regression gate: ")]
    assert len(lines) == 1, result.stderr
    assert not any(line.startswith("error: ") for line in result.stderr.splitlines() if line != lines[0])
    return lines[0].removeprefix(prefix)


def test_gate_one_capture_a_side_needs_a_noise_floor(tmp_path):
    """One capture a side: the interval holds no run-to-run variation, so the gate does not judge (exit 3)
    unless a measured --noise-floor is given, which lowers the interval's low end by that much."""
    p = _write(tmp_path, base=steps(widths(1000)), slow=steps(widths(1250, NOISE2)), same=steps(widths(1000, NOISE2)),
               short=steps([1000, 1250]), lost=steps(widths(1250, NOISE2), launches_only=True))
    report = pair(tmp_path, steps(widths(1000)), steps(widths(1250, NOISE2)))
    s = report.verdict.step
    assert s.point == pytest.approx(25.0) and 10 < s.low < 25 < s.high
    interval = f"+25.0% (95% CI {s.low:+.1f}..{s.high:+.1f}%)"

    def run(*args):
        return CliRunner().invoke(cli, ["diff", *args])

    unjudged = run(p["base"], p["slow"], "--fail-on-regression", "10")
    assert unjudged.exit_code == V.NOT_JUDGED == 3, unjudged.output
    assert _gate_line(unjudged) == (
        f"regression gate: not judged: 1 capture on BEFORE and 1 capture on AFTER, so the interval (+25.0%, 95% CI "
        f"{s.low:+.1f}..{s.high:+.1f}%) holds no run-to-run variation; give each side 3 or more captures "
        "(BEFORE... --vs AFTER...) or a measured --noise-floor PCT.")
    failed = run(p["base"], p["slow"], "--fail-on-regression", "10", "--noise-floor", "0")
    assert failed.exit_code == 1, failed.output
    table = failed.stdout.split("\n\n")[1].splitlines()     # headline, then the ledger buckets
    assert table[0].startswith("ledger bucket")
    assert table[1].split()[:4] == ["device", "idle", "(all)", "+0.25"] and table[1].endswith("moved")
    assert all(len(line) <= 80 for line in failed.stdout.splitlines())
    assert _gate_line(failed) == (f"regression gate: FAILED: the median step changed {interval}; even its low "
                                  f"end less the --noise-floor 0%, {s.low:+.1f}%, exceeds --fail-on-regression 10%.")
    # a measured floor that brings the low end to 10 exactly passes (at the threshold); 0.01 less fails
    floored = run(p["base"], p["slow"], "--fail-on-regression", "10", "--noise-floor", repr(s.low - 10))
    assert floored.exit_code == 0 and "regression gate: passed" in _gate_line(floored)
    floored_under = run(p["base"], p["slow"], "--fail-on-regression", "10", "--noise-floor", repr(s.low - 10.01))
    assert floored_under.exit_code == 1
    # the point (+25%) is over 20%, but the low end is not: a slowdown that may be under the allowance passes
    passed = run(p["base"], p["slow"], "--fail-on-regression", "20", "--noise-floor", "0")
    assert passed.exit_code == 0, passed.output
    assert _gate_line(passed) == (f"regression gate: passed: the median step changed {interval}; its low end less "
                                  f"the --noise-floor 0%, {s.low:+.1f}%, does not exceed --fail-on-regression 20%.")
    # at the threshold: a low end equal to PCT does not exceed it
    at = run(p["base"], p["slow"], "--fail-on-regression", repr(s.low), "--noise-floor", "0")
    assert at.exit_code == 0 and "regression gate: passed" in _gate_line(at)
    just_under = run(p["base"], p["slow"], "--fail-on-regression", repr(s.low - 0.01), "--noise-floor", "0")
    assert just_under.exit_code == 1
    same = run(p["base"], p["same"], "--fail-on-regression", "0", "--noise-floor", "0")
    assert same.exit_code == 0 and _gate_line(same).startswith("regression gate: passed: the median step changed +0.0%")
    short = run(p["short"], p["slow"], "--fail-on-regression", "0", "--noise-floor", "0")
    assert short.exit_code == 3
    assert _gate_line(short) == ("regression gate: not judged: BEFORE is too short: 2 steady windows "
                                 "in ProfilerStep#1-#2 (2 windows); 3 are needed for an interval.")
    lost = run(p["base"], p["lost"], "--fail-on-regression", "0", "--noise-floor", "0")
    assert lost.exit_code == 3
    assert _gate_line(lost).startswith("regression gate: not judged: AFTER's capture is not valid: ")
    # json: stdout stays one document; the gate is in it and its line on stderr
    as_json = run(p["base"], p["slow"], "--fail-on-regression", "10", "--noise-floor", "0", "--format", "json")
    assert as_json.exit_code == 1
    doc = json.loads(as_json.stdout)
    out = doc["result"]
    assert out["gate"] == {"failed": True, "judged": True, "line": _gate_line(as_json)}
    assert doc["exit"] == {"code": 1, "reason": _gate_line(as_json)}   # the envelope says why it exits 1
    unjudged_json = run(p["base"], p["slow"], "--fail-on-regression", "10", "--format", "json")
    assert json.loads(unjudged_json.stdout)["exit"] == {"code": 3, "reason": _gate_line(unjudged)}
    passed_json = run(p["base"], p["slow"], "--fail-on-regression", "20", "--noise-floor", "0", "--format", "json")
    assert passed_json.exit_code == 0 and "exit" not in json.loads(passed_json.stdout)
    assert out["verdict"]["step_change_pct"]["low"] == pytest.approx(s.low)
    assert out["verdict"]["buckets"]["idle.dataloader"]["point"] == 0.0
    assert (out["before_captures"], out["after_captures"]) == ([p["base"]], [p["slow"]])
    alone = run(p["base"], p["slow"], "--noise-floor", "3")
    assert alone.exit_code == 2 and "give it with --fail-on-regression" in alone.output


# ------------------------------------------------------------------------------------------ baselines


def test_baseline_store_reuse_and_errors(tmp_path):
    p = _write(tmp_path, base=steps(widths(1000)), slow=steps(widths(1250, NOISE2)))
    store = tmp_path / "store"

    def run(*args):
        return CliRunner().invoke(cli, ["diff", *args, "--baseline-dir", str(store)])

    stored = run(p["base"], "--baseline", "main", "--update-baseline", "--fail-on-regression", "10")
    assert stored.exit_code == 0, stored.output
    assert stored.stdout == ""
    assert stored.stderr.splitlines()[-2:] == [
        f"baseline 'main' stored at {store / 'main.json'} (from {p['base']})",
        "regression gate: not judged, nothing to compare: --update-baseline stores a baseline and compares nothing."]
    body = json.loads((store / "main.json").read_text())
    assert body["kineto_sql_baseline"] == 2 and len(body["captures"]) == 1
    assert body["captures"][0]["summary"]["widths"] == [int(w * 1000) for w in widths(1000)]
    assert "traceEvents" not in body and (store / "main.json").stat().st_size < 20_000
    both = CliRunner().invoke(cli, ["diff", p["base"], p["slow"], "--fail-on-regression", "10", "--noise-floor", "0"])
    reused = run(p["slow"], "--baseline", "main", "--fail-on-regression", "10", "--noise-floor", "0")
    assert reused.exit_code == 1
    assert reused.stdout == both.stdout                  # the same verdict, rows and all, from the small file
    assert _gate_line(reused) == _gate_line(both)
    # two traces and --baseline: BEFORE is stored as NAME
    again = run(p["slow"], p["base"], "--baseline", "pr")
    assert again.exit_code == 0 and json.loads((store / "pr.json").read_text())["captures"][0]["trace"] == p["slow"]
    # a baseline from other query versions is flagged, not refused
    body["captures"][0]["summary"]["method"] = "reading.step_ledger@0 lib.ledger@1"
    (store / "old.json").write_text(json.dumps(body))
    old = run(p["slow"], "--baseline", "old", "--format", "json")
    flagged = [c for c in json.loads(old.stdout)["result"]["verdict"]["checks"] if c["name"] == "method"]
    assert len(flagged) == 1 and not flagged[0]["blocking"]
    assert flagged[0]["sentence"].startswith("BEFORE's and AFTER's numbers come from different query versions "
                                             "(reading.step_ledger@0 lib.ledger@1 against reading.step_ledger@1 lib.")
    missing = run(p["slow"], "--baseline", "nope")
    assert missing.exit_code == 2
    assert missing.stderr.strip() == (f"error: no baseline 'nope' at {store / 'nope.json'}: record one with "
                                      "`kineto-sql diff TRACE --baseline nope --update-baseline`.")
    bad_name = run(p["slow"], "--baseline", "../main")
    assert bad_name.exit_code == 2 and "baseline name '../main' is not usable" in bad_name.stderr
    (store / "broken.json").write_text('{"kineto_sql_baseline": 1, "summary": {"schema": 1}}')
    broken = run(p["slow"], "--baseline", "broken")
    assert broken.exit_code == 2 and "is not a kineto-sql baseline" in broken.stderr
    assert "Traceback" not in broken.output
    lone = CliRunner().invoke(cli, ["diff", p["slow"]])
    assert lone.exit_code == 2 and "one TRACE against --baseline NAME" in lone.output
    hta = run(p["slow"], "--baseline", "main", "--hta-compat")
    assert hta.exit_code == 2 and "a baseline keeps no HTA summary" in hta.output


def test_summary_round_trips_through_json(tmp_path):
    side = D.side_file(steps(widths(1000), shapes=True).write(tmp_path, "t.json.gz"))
    again = V.SideSummary.from_json(json.loads(json.dumps(side.summary.to_json())))
    assert again == side.summary
    assert side.summary.settings == {"with_stack": False, "record_shapes": True, "profile_memory": False}
    assert side.summary.source == "profiler_step" and side.summary.device == "a device without deviceProperties"
    assert side.summary.started_ns is None       # the builder's clock starts at 0: no recording time
    path = baselines.save(side, "t", tmp_path)
    [loaded] = baselines.load("t", tmp_path)
    assert loaded.summary == side.summary
    assert loaded.rows.astype(str).values.tolist() == side.rows[list(loaded.rows.columns)].astype(str).values.tolist()
    assert path == tmp_path / "t.json"
    # several captures: one entry each, in order
    other = D.side_file(steps(widths(1100, NOISE2)).write(tmp_path, "u.json.gz"))
    baselines.save([side, other], "two", tmp_path)
    assert [c.summary for c in baselines.load("two", tmp_path)] == [side.summary, other.summary]
    # a format-1 file (one capture, before several were stored) still loads
    body = json.loads((tmp_path / "t.json").read_text())["captures"][0]
    (tmp_path / "v1.json").write_text(json.dumps({"kineto_sql_baseline": 1, "name": "v1", **body}))
    assert [c.summary for c in baselines.load("v1", tmp_path)] == [side.summary]


# ------------------------------------------------------------------------------------------ real traces


needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")


def _golden(name: str) -> D.Side:
    return D.side_file(GOLDEN / "traces" / f"{name}.json.gz")


@pytest.mark.parametrize(("scenario", "point", "low", "high"), [
    # the planted twin loads each batch inside the step (48-61 ms), the fixed one prefetches (28-37 ms)
    ("input_bound", -37.2, -54.5, -23.0),
    ("memory_churn", -76.3, -82.0, -54.1),
    # the same 4 blocks without checkpoint(): no forward recompute in the backward pass
    ("checkpoint_nostack", -20.1, -35.6, -9.4),
])
def test_golden_fix_that_changes_step_time_is_beyond_noise(scenario, point, low, high):
    report = D.build_diff(_golden(f"{scenario}_planted"), _golden(f"{scenario}_fixed"))
    v = report.verdict
    assert v.checks == [] and v.step.beyond_noise
    assert (round(v.step.point, 1), round(v.step.low, 1), round(v.step.high, 1)) == (point, low, high)
    assert report.headline.startswith(f"AFTER is faster by {abs(point):.1f}% (95% CI {-high:.1f}-{-low:.1f}%; "
                                      "3 vs 3 steady windows)")


def test_golden_fix_inside_the_noise_is_not_claimed():
    """checkpoint with with_stack: the recompute of 4 small blocks is inside the steps' spread (14-17 ms)."""
    v = D.build_diff(_golden("checkpoint_planted"), _golden("checkpoint_fixed")).verdict
    assert v.checks == [] and not v.step.beyond_noise
    assert V.step_phrase(v) == "No change beyond noise (+3.7%, 95% CI -11.1..+18.2%; 3 vs 3 steady windows)"


def test_golden_wide_first_step_without_one_time_work_stays_steady():
    """op_storm fixed: its first step is the widest, but no host op in it is one no later step runs, so it is
    not cold (lib.iterations) and all 3 windows are compared: the fix is found. (A side left with 2 steady
    windows is named "too short": the builder cases above.)"""
    v = D.build_diff(_golden("op_storm_planted"), _golden("op_storm_fixed")).verdict
    assert v.checks == [] and v.step.beyond_noise and (v.before_windows, v.after_windows) == (3, 3)
    assert (round(v.step.point, 1), round(v.step.low, 1), round(v.step.high, 1)) == (-76.1, -94.4, -51.9)


def test_same_recording_permuted_and_jittered_says_no_change():
    """The golden set has no two recordings of one scenario, so one trace is compared with a copy of its own
    windows, permuted and each stretched by a deterministic +-3%: no change beyond noise."""
    side = _golden("memory_churn_planted")
    s = side.summary
    order = list(reversed(range(len(s.widths))))
    jitter = [1.03, 0.97, 1.0][: len(order)]
    copy = dataclasses.replace(
        s, widths=[int(s.widths[i] * j) for i, j in zip(order, jitter)],
        buckets={k: [int(v[i] * j) for i, j in zip(order, jitter)] for k, v in s.buckets.items()},
        cold=[s.cold[i] for i in order], steps=[s.steps[i] for i in order])
    v = V.verdict(s, copy)
    assert not v.step.beyond_noise and v.step.low < 0 < v.step.high
    assert V.step_phrase(v).startswith("No change beyond noise (")


@needs_corpus
def test_resnet50_nw0_to_nw4_interval():
    before = D.side_file(CORPUS / "kineto_tbp_resnet50_nw0_run1623143089861.pt.trace.json.gz")
    after = D.side_file(CORPUS / "kineto_tbp_resnet50_nw4_run1623212756351.pt.trace.json.gz")
    report = D.build_diff(before, after)
    v = report.verdict
    # nw4 has two slow steps of six (163 and 182 ms): the interval is wide on the slow side, but leaves 0 out
    assert (v.before_windows, v.after_windows, v.checks) == (6, 6, [])
    assert (round(v.step.point, 1), round(v.step.low, 1), round(v.step.high, 1)) == (-28.2, -31.9, -2.3)
    assert report.headline.startswith("AFTER is faster by 28.2% (95% CI 2.3-31.9%; 6 vs 6 steady windows): "
                                      "median step 176.3 ms -> 126.5 ms (-28%)")
    assert v.buckets["idle.dataloader"].beyond_noise and v.buckets["idle.dataloader"].high < -50e6
    assert not v.groups["busy"].beyond_noise and v.groups["idle"].beyond_noise
    assert "the saving is host-side" in report.headline
    # one capture a side: the headline says what its interval leaves out, and the gate does not judge (exit 3)
    assert report.headline.endswith(V.ONE_CAPTURE)
    assert (V.gate(v, 5).judged, V.gate(v, 5).exit_code) == (False, 3)
    assert V.gate(v, 5, noise_floor=2).line == ("regression gate: passed: the median step changed -28.2% (95% CI "
                                                "-31.9..-2.3%); its low end less the --noise-floor 2%, -33.9%, does "
                                                "not exceed --fail-on-regression 5%.")


# ------------------------------------------------------------------------------------------ several captures a side


def test_nested_bootstrap_with_one_capture_a_side_is_the_window_bootstrap():
    b, a = [10.0, 11.0, 9.0, 10.5], [8.0, 8.5, 7.5, 8.2]
    assert NestedBootstrap([4], [4]).relative_change([b], [a]) == Bootstrap(4, 4).relative_change(b, a)
    assert NestedBootstrap([4], [4]).difference([b], [a]) == Bootstrap(4, 4).difference(b, a)


def test_nested_bootstrap_draws_only_windows_of_the_drawn_captures():
    """Captures of 1 and 5 windows: a shorter capture's padding must not draw windows. Capture 0 holds one
    window of 5, capture 1 five windows of 1: the pooled median of any draw is 1 or 5, never 3."""
    boot = NestedBootstrap([1, 5], [1, 5], resamples=2000)
    from kineto_sql.diff.stats import _pooled_medians

    medians = _pooled_medians([[5.0], [1.0] * 5], boot._before)
    assert set(np.unique(medians)) == {1.0, 5.0}
    # a draw of capture 0 twice is its one window twice (median 5): about a quarter of draws
    assert 0.2 < float(np.mean(medians == 5.0)) < 0.3


def _simulated(k: int, change: float, trials: int = 300, n: int = 4, run_sd: float = 0.10, step_sd: float = 0.03):
    """Pairs of sides of `k` captures, `n` windows each: lognormal run-to-run (`run_sd`) and step-to-step
    (`step_sd`) spread, AFTER `change` times faster or slower. (coverage of the truth, share beyond noise)."""
    rng = np.random.default_rng(11)
    covered = beyond = 0
    for trial in range(trials):
        def side(base):
            return [base * np.exp(rng.normal(0, run_sd) + rng.normal(0, step_sd, n)) for _ in range(k)]
        iv = NestedBootstrap([n] * k, [n] * k, resamples=1000, seed=trial).relative_change(side(1000.0),
                                                                                          side(1000.0 * (1 + change)))
        covered += iv.low <= 100 * change <= iv.high
        beyond += iv.beyond_noise
    return covered / trials, beyond / trials


def test_interval_coverage_with_run_to_run_noise_by_captures_a_side():
    """10% run-to-run and 3% step-to-step spread, 4 windows a capture, 300 pairs of a -20% change and 300 of
    none. Measured: the interval covers -20% in 24% of pairs with 1 capture a side (the window bootstrap
    cannot see run-to-run variation), 69% with 2, 87% with 3, 97% with 5; a pair with no change is called
    beyond noise in 76%, 31%, 13% and 3%. Hence the gate's 3 captures a side."""
    measured = {k: (_simulated(k, -0.20)[0], _simulated(k, 0.0)[1]) for k in (1, 2, 3, 5)}
    assert measured == {1: (0.24, 0.76), 2: (0.6933333333333334, 0.30666666666666664),
                        3: (0.8733333333333333, 0.12666666666666668), 5: (0.9666666666666667, 0.03333333333333333)}


RUNS = (-0.08, 0.0, 0.09)          # run-to-run offsets of the three captures of a side (median 0)
RUNS2 = (0.07, -0.06, 0.01)


def captures(base: float, runs=RUNS, noise=NOISE, **kw) -> list:
    """One builder trace per run: the side's steps, all shifted by the run's offset, +-2% step noise."""
    return [steps([w * (1 + r) for w in widths(base, noise, scale=0.4)], **kw) for r in runs]


def _sides(tmp_path, name: str, traces: list) -> list:
    folder = tmp_path / name
    folder.mkdir()
    return [trace.write(folder, f"{name}_{i}.json.gz") for i, trace in enumerate(traces)]


def test_builder_run_to_run_noise_one_capture_is_fooled_three_are_not(tmp_path):
    """The same code, captures 8% apart from run to run, 2% step to step: one capture a side (the slowest
    against the fastest) calls it a change; three a side say no change beyond noise, and the gate judges
    and passes. A real -30% change with the same run noise is still found, its interval covering -30%."""
    same_b = [D.side_file(p) for p in _sides(tmp_path, "b", captures(1000))]
    same_a = [D.side_file(p) for p in _sides(tmp_path, "a", captures(1000, RUNS2, NOISE2))]
    fooled = D.build_diff(same_b[0], same_a[0]).verdict      # run -8% against run +7%
    assert fooled.step.beyond_noise and fooled.step.low > 10
    report = D.build_diff(same_b, same_a)
    v = report.verdict
    assert (v.before_captures, v.after_captures, v.before_windows, v.after_windows, v.checks) == (3, 3, 21, 21, [])
    assert v.run_to_run and not v.step.beyond_noise and v.step.low < 0 < v.step.high
    assert report.headline.startswith(f"No change beyond noise ({v.step.point:+.1f}%, 95% CI {v.step.low:+.1f}.."
                                      f"{v.step.high:+.1f}%; 3 vs 3 captures, 21 vs 21 steady windows)")
    assert report.headline.endswith("3 and 3 captures: the interval resamples captures, then windows in each, so it "
                                    "holds the run-to-run variation these captures show.")
    result = V.gate(v, 5)
    assert (result.judged, result.failed, result.exit_code) == (True, False, 0)
    assert result.line.startswith("regression gate: passed: the median step changed ")
    # two captures a side: judged too narrow, not judged
    two = V.verdict([s.summary for s in same_b[:2]], [s.summary for s in same_a[:2]])
    assert V.gate(two, 5).exit_code == 3
    assert "2 captures on BEFORE and 2 captures on AFTER, so the interval" in V.gate(two, 5).line
    assert "is too narrow to judge" in V.gate(two, 5).line
    assert V.captures_phrase(two).endswith("; with 2 on a side it is often too narrow, 3 or more are better.")
    faster = [D.side_file(p) for p in _sides(tmp_path, "f", captures(700, RUNS2, NOISE2, loader_us=100))]
    v = D.build_diff(same_b, faster).verdict
    # the pooled median of captures shifted by their runs is not the base exactly (-29.3%); the interval covers -30%
    assert v.step.point == pytest.approx(-29.3, abs=0.05)
    assert v.step.low < -30.0 < v.step.high < 0


def test_cli_sides_of_several_captures(tmp_path):
    """A directory a side, or BEFORE... --vs AFTER...; the gate judges 3 captures a side (exit 1 on a real
    slowdown beyond PCT); a baseline of a directory stores every capture."""
    before = _sides(tmp_path, "main", captures(1000))
    slower = _sides(tmp_path, "pr", captures(1300, RUNS2, NOISE2, kernel_us=400))

    def run(*args):
        return CliRunner().invoke(cli, ["diff", *[str(a) for a in args]])

    by_dir = run(tmp_path / "main", tmp_path / "pr", "--fail-on-regression", "5", "--format", "json")
    assert by_dir.exit_code == 1, by_dir.output
    out = json.loads(by_dir.stdout)["result"]
    assert out["before_captures"] == [str(p) for p in before] and out["after_captures"] == [str(p) for p in slower]
    assert out["verdict"]["before_captures"] == 3 and out["verdict"]["run_to_run"] is True
    step = out["verdict"]["step_change_pct"]
    assert step["low"] > 5 and step["low"] < 30.0 < step["high"]    # the true +30% is inside, 5% under the low end
    assert out["headline"].startswith(f"AFTER is slower by {step['point']:.1f}% (95% CI {step['low']:.1f}-")
    assert _gate_line(by_dir).startswith(f"regression gate: FAILED: the median step changed {step['point']:+.1f}% (95% CI +")
    by_vs = run(*before, "--vs", *slower, "--fail-on-regression", "5", "--format", "json")
    assert by_vs.exit_code == 1 and json.loads(by_vs.stdout)["result"]["verdict"] == out["verdict"]
    store = tmp_path / "store"
    stored = run(tmp_path / "main", "--baseline", "main", "--update-baseline", "--baseline-dir", store)
    assert stored.exit_code == 0, stored.output
    assert [c["trace"] for c in json.loads((store / "main.json").read_text())["captures"]] == [str(p) for p in before]
    reused = run(tmp_path / "pr", "--baseline", "main", "--baseline-dir", store, "--fail-on-regression", "5",
                 "--format", "json")
    assert reused.exit_code == 1 and json.loads(reused.stdout)["result"]["verdict"] == out["verdict"]


@pytest.mark.parametrize(("args", "says"), [
    (["a", "b", "c"], "3 traces and no --vs: give several captures a side as BEFORE... --vs AFTER..."),
    (["a", "--vs", "b", "--vs", "c"], "--vs separates the two sides: give it once"),
    (["a", "--vs"], "--vs needs captures on both sides"),
    (["nope.json", "a"], "BEFORE: nope.json does not exist."),
    (["empty", "a"], "BEFORE: directory empty holds no trace file"),
    (["a", "--vs", "x*.json.gz"], "AFTER: no file matches x*.json.gz."),
    (["a", "a", "--vs", "b"], "BEFORE: a is given twice; each capture counts once."),
    (["a", "b", "--formt", "json"], "no such option: --formt"),
])
def test_cli_sides_bad_input_is_one_sentence(tmp_path, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b", "c"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(cli, ["diff", *args])
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output


def test_checks_name_the_capture():
    """Several captures a side: a capture without a steady window and a side that mixes devices are named."""
    def summary(label, widths, device="CPU only", cold=None):
        n = len(widths)
        return V.SideSummary(label, device, "profiler_step", list(range(1, n + 1)), cold or [False] * n, widths,
                             {"host.other": list(widths)}, {k: False for k in V.SETTINGS})

    b = [summary("b1.json", [10, 11, 12]), summary("b2.json", [10], cold=[True])]
    a = [summary("a1.json", [10, 11, 12]), summary("a2.json", [10, 11, 12], device="NVIDIA H100 80GB HBM3")]
    found = V.checks(b, a)
    assert [(c.name, c.blocking, c.sentence) for c in found[:2]] == [
        ("steady_windows", True, "BEFORE capture 2 (b2.json) has no steady window (ProfilerStep#1 (1 window)): drop "
                                 "it or record it again."),
        ("device", True, "AFTER's captures differ among themselves: CPU only and NVIDIA H100 80GB HBM3.")]
    v = V.verdict(b, a)      # the empty capture adds nothing: 3 steady windows on BEFORE
    assert V.captures_phrase(V.verdict(b[:1], a)) == (
        "One capture on BEFORE: the interval covers its step-to-step noise, not its run-to-run variation; record it "
        "more than once before trusting a small change.")
    assert (v.before_captures, v.before_windows, v.comparable) == (2, 3, False)
    assert V.gate(v, 5).line.startswith("regression gate: not judged: BEFORE capture 2 (b2.json) has no steady")


# ------------------------------------------------------------------------------------------ repeated golden recordings


RERUNS = GOLDEN / "reruns"


@pytest.fixture(scope="module")
def reruns() -> dict:
    return {p.name.removesuffix(".json.gz"): D.side_file(p) for p in sorted(RERUNS.glob("*.json.gz"))}


def test_same_scenario_recorded_six_times(reruns):
    """golden checkpoint (planted), the same code recorded six times on a loaded machine (median steps 50 to
    500 ms). One capture a side: 13 of its 15 pairs are called a change beyond noise; three a side (odd runs
    against even runs): no change beyond noise, and the gate judges and passes."""
    ck = [reruns[f"checkpoint_planted_r{i}"] for i in range(1, 7)]
    import itertools

    pairs = [D.build_diff(x, y).verdict.step.beyond_noise for x, y in itertools.combinations(ck, 2)]
    assert (sum(pairs), len(pairs)) == (13, 15)
    report = D.build_diff(ck[0::2], ck[1::2])
    v = report.verdict
    assert (v.before_captures, v.after_captures, v.checks) == (3, 3, [])
    assert V.step_phrase(v) == ("No change beyond noise (+68.7%, 95% CI -88.2..+574.4%; 3 vs 3 captures, 9 vs 9 "
                                "steady windows)")
    assert V.gate(v, 5).exit_code == 0
    # the first three against the last three: the machine got busier while they were recorded (steps of 50 ms,
    # then of 90-500 ms), which no interval can tell from a change: it is said, as a flag
    assert [c.summary.started_ns < d.summary.started_ns for c, d in zip(ck, ck[1:])] == [True] * 5
    batched = D.build_diff(ck[:3], ck[3:]).verdict
    assert batched.step.beyond_noise and batched.step.low > 50
    assert [(c.name, c.blocking, c.sentence) for c in batched.checks] == [("order", False, (
        "All of BEFORE's captures were recorded before all of AFTER's (the traces' clocks): a drift of the machine "
        "between the two batches (load, clock speed, temperature) reads as a change the interval cannot tell apart; "
        "record the sides in turn."))]


def test_planted_against_fixed_three_captures_a_side(reruns):
    """golden memory_churn, recorded three times a variant in turn: the fix is found with an interval that
    leaves 0 out, and the gate judges (a speedup passes)."""
    report = D.build_diff([reruns[f"memory_churn_planted_r{i}"] for i in (1, 2, 3)],
                          [reruns[f"memory_churn_fixed_r{i}"] for i in (1, 2, 3)])
    v = report.verdict
    assert v.checks == [] and v.step.beyond_noise and v.step.high < 0
    assert V.step_phrase(v) == ("AFTER is faster by 71.8% (95% CI 37.9-82.7%; 3 vs 3 captures, 9 vs 9 steady "
                                "windows)")
    assert (V.gate(v, 5).judged, V.gate(v, 5).exit_code) == (True, 0)


@pytest.mark.parametrize("scenario, phrase", [
    ("input_bound", "AFTER is faster by 46.6% (95% CI 24.3-60.1%; 3 vs 3 captures, 9 vs 9 steady windows)"),
    ("gc_stall", "AFTER is faster by 17.4% (95% CI 12.1-94.4%; 3 vs 3 captures, 9 vs 9 steady windows)"),
    ("collate_heavy_python", "AFTER is faster by 32.0% (95% CI 3.1-52.8%; 3 vs 3 captures, 9 vs 9 steady windows)"),
    ("op_storm", "AFTER is faster by 82.1% (95% CI 73.0-83.7%; 3 vs 3 captures, 9 vs 9 steady windows)"),
])
def test_golden_fix_found_with_three_captures_recorded_in_turn_on_a_quiet_machine(reruns, scenario, phrase):
    """Four golden scenarios recorded planted r1, fixed r1, planted r2, ... on an otherwise idle machine: every
    fix is found, with an interval that leaves 0 out, and no comparability flag (the sides were taken in turn)."""
    v = D.build_diff([reruns[f"{scenario}_planted_r{i}"] for i in (1, 2, 3)],
                     [reruns[f"{scenario}_fixed_r{i}"] for i in (1, 2, 3)]).verdict
    assert v.checks == [] and v.step.beyond_noise and v.step.high < 0
    assert V.step_phrase(v) == phrase
