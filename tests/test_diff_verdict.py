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
from kineto_sql.diff.stats import Bootstrap, Interval
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
    result = V.gate(v, 5)
    assert (result.judged, result.failed) == (True, False)


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
    lines = [line for line in result.stderr.splitlines() if line.startswith("regression gate: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_gate_exit_codes_and_reason(tmp_path):
    p = _write(tmp_path, base=steps(widths(1000)), slow=steps(widths(1250, NOISE2)), same=steps(widths(1000, NOISE2)),
               short=steps([1000, 1250]), lost=steps(widths(1250, NOISE2), launches_only=True))
    report = pair(tmp_path, steps(widths(1000)), steps(widths(1250, NOISE2)))
    s = report.verdict.step
    assert s.point == pytest.approx(25.0) and 10 < s.low < 25 < s.high
    interval = f"+25.0% (95% CI {s.low:+.1f}..{s.high:+.1f}%)"

    def run(*args):
        return CliRunner().invoke(cli, ["diff", *args])

    failed = run(p["base"], p["slow"], "--fail-on-regression", "10")
    assert failed.exit_code == 1, failed.output
    table = failed.stdout.split("\n\n")[1].splitlines()     # headline, then the ledger buckets
    assert table[0].startswith("ledger bucket")
    assert table[1].split()[:4] == ["device", "idle", "(all)", "+0.25"] and table[1].endswith("moved")
    assert all(len(line) <= 80 for line in failed.stdout.splitlines())
    assert _gate_line(failed) == (f"regression gate: FAILED: the median step changed {interval}; even its low "
                                  f"end, {s.low:+.1f}%, exceeds --fail-on-regression 10%.")
    # the point (+25%) is over 20%, but the low end is not: a slowdown that may be under the allowance passes
    passed = run(p["base"], p["slow"], "--fail-on-regression", "20")
    assert passed.exit_code == 0, passed.output
    assert _gate_line(passed) == (f"regression gate: passed: the median step changed {interval}; its low end, "
                                  f"{s.low:+.1f}%, does not exceed --fail-on-regression 20%.")
    # at the threshold: a low end equal to PCT does not exceed it
    at = run(p["base"], p["slow"], "--fail-on-regression", repr(s.low))
    assert at.exit_code == 0 and "regression gate: passed" in _gate_line(at)
    just_under = run(p["base"], p["slow"], "--fail-on-regression", repr(s.low - 0.01))
    assert just_under.exit_code == 1
    same = run(p["base"], p["same"], "--fail-on-regression", "0")
    assert same.exit_code == 0 and _gate_line(same).startswith("regression gate: passed: the median step changed +0.0%")
    short = run(p["short"], p["slow"], "--fail-on-regression", "0")
    assert short.exit_code == 0
    assert _gate_line(short) == ("regression gate: not judged, so not failed: BEFORE is too short: 2 steady windows "
                                 "in ProfilerStep#1-#2 (2 windows); 3 are needed for an interval.")
    lost = run(p["base"], p["lost"], "--fail-on-regression", "0")
    assert lost.exit_code == 0
    assert _gate_line(lost).startswith("regression gate: not judged, so not failed: AFTER's capture is not valid: ")
    # json: stdout stays one document; the gate is in it and its line on stderr
    as_json = run(p["base"], p["slow"], "--fail-on-regression", "10", "--format", "json")
    assert as_json.exit_code == 1
    out = json.loads(as_json.stdout)["result"]
    assert out["gate"] == {"failed": True, "judged": True, "line": _gate_line(as_json)}
    assert out["verdict"]["step_change_pct"]["low"] == pytest.approx(s.low)
    assert out["verdict"]["buckets"]["idle.dataloader"]["point"] == 0.0


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
        "regression gate: not judged, so not failed: --update-baseline stores a baseline and compares nothing."]
    body = json.loads((store / "main.json").read_text())
    assert body["summary"]["widths"] == [int(w * 1000) for w in widths(1000)]
    assert "traceEvents" not in body and (store / "main.json").stat().st_size < 20_000
    both = CliRunner().invoke(cli, ["diff", p["base"], p["slow"], "--fail-on-regression", "10"])
    reused = run(p["slow"], "--baseline", "main", "--fail-on-regression", "10")
    assert reused.exit_code == 1
    assert reused.stdout == both.stdout                  # the same verdict, rows and all, from the small file
    assert _gate_line(reused) == _gate_line(both)
    # two traces and --baseline: BEFORE is stored as NAME
    again = run(p["slow"], p["base"], "--baseline", "pr")
    assert again.exit_code == 0 and json.loads((store / "pr.json").read_text())["trace"] == p["slow"]
    # a baseline from other query versions is flagged, not refused
    body["summary"]["method"] = "reading.step_ledger@0 lib.ledger@1"
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
    path = baselines.save(side, "t", tmp_path)
    loaded = baselines.load("t", tmp_path)
    assert loaded.summary == side.summary
    assert loaded.rows.astype(str).values.tolist() == side.rows[list(loaded.rows.columns)].astype(str).values.tolist()
    assert path == tmp_path / "t.json"


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


def test_golden_short_side_is_named():
    """op_storm fixed: its first step is cold, 2 steady windows left."""
    v = D.build_diff(_golden("op_storm_planted"), _golden("op_storm_fixed")).verdict
    assert v.step is None
    assert [c.sentence.split(":")[0] for c in v.checks] == ["AFTER is too short"]


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
