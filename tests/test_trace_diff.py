"""diff v2: window choice, status by time, renamed kernels paired by call path, the headline's reason, short
names and --fail-on-regression, on builder traces with hand-computed numbers; then the corpus pairs."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kineto_sql.diff import traces as D
from kineto_sql.cli.main import cli
from kineto_sql.errors import KinetoSqlError
from kineto_sql.run.runner import run_query
from tests.conftest import CORPUS
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep
from tests.query_support import load_trace  # noqa: F401  (fixture)


def job(step_us: float, kernel: str, loader_us: float, relu_us: float, corr0: int = 1) -> KinetoTrace:
    """Two steps of `step_us`: a DataLoader annotation, aten::mm launching a 100 us `kernel`, aten::relu."""
    events = []
    for i in range(2):
        t0 = i * step_us
        events += [
            ProfilerStep(i + 1, ts_us=t0, dur_us=step_us),
            CpuOp("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts_us=t0 + 1, dur_us=loader_us,
                  cat="user_annotation") if loader_us else None,
            CpuOp("aten::mm", ts_us=t0 + loader_us + 2, dur_us=150),
            Launch(correlation=corr0 + i, ts_us=t0 + loader_us + 10, dur_us=5),
            Kernel(correlation=corr0 + i, ts_us=t0 + loader_us + 20, dur_us=100, name=kernel),
            CpuOp("aten::relu", ts_us=t0 + loader_us + 200, dur_us=relu_us),
        ]
    return KinetoTrace([e for e in events if e is not None])


def side(tp) -> D.Side:
    return D.Side("t", run_query(tp, "reading.diff_side").df)


def test_host_side_speedup_renamed_kernel_and_status_by_time(load_trace):
    before = side(load_trace(job(1000, "volta_sgemm_128x64_nn", 500, 100)))
    after = side(load_trace(job(600, "sm80_xmma_gemm_f32", 0, 80)))
    report = D.build_diff(before, after)
    rows = report.rows.set_index(["device", "name"])
    # the same mm under the same call path, another kernel name: one renamed row, 100 us per step both sides
    renamed = rows.loc[("GPU", "volta_sgemm_128x64_nn -> sm80_xmma_gemm_f32")]
    assert (renamed.status, renamed.before_us, renamed.after_us, renamed.path) == \
        ("renamed", 100.0, 100.0, "ProfilerStep#* > aten::mm")
    # relu 100 -> 80 us: -20%, -20 us: decreased; mm 150 -> 150: unchanged; the loader is gone
    assert rows.loc[("CPU", "aten::relu"), "status"] == "decreased"
    assert rows.loc[("CPU", "aten::mm"), "status"] == "unchanged"
    loader = rows.loc[("CPU", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")]
    assert (loader.status, loader.diff_us) == ("disappeared", -500.0)
    assert report.rows.diff_us.abs().is_monotonic_decreasing             # ranked by time moved
    assert report.step_change_pct == pytest.approx(-40.0)
    assert report.headline.startswith("AFTER is 40.0% faster: median step 1.0 ms -> 600 us (-40%)")
    assert "kernel total 100 us -> 100 us (+0%)" in report.headline
    # the ledger: 1000 = busy.gemm 100 + idle.dataloader 500 + idle.launch 50 + idle.host_compute 350;
    # 600 = 100 + 50 + 450
    assert "Moved most: idle.dataloader -500 us, idle.host_compute +100 us." in report.headline
    assert ("Why: the GPU did the same work (kernel total +0.0 ms) while GPU idle moved -0.4 ms per step: the "
            "saving is host-side; the largest host change is "
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ -500 us.") in report.headline
    assert report.status_counts["renamed"] == 1


def test_device_side_slowdown(load_trace):
    slow = job(1000, "k", 0, 50)
    slow.events = [e if not isinstance(e, Kernel) else Kernel(e.correlation, e.ts_us, 500, name="k")
                   for e in slow.events]
    report = D.build_diff(side(load_trace(job(1000, "k", 0, 50))), side(load_trace(slow)))
    # same step width, kernels 100 -> 500 us: under the 5% threshold on the step, so no material change
    assert report.headline.startswith("No material change (+0.0%")
    gpu = report.rows[report.rows.device == "GPU"].iloc[0]
    assert (gpu.status, gpu.diff_us) == ("increased", 400.0)


def test_window_choice_median_and_step(load_trace):
    trace = KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=1000), ProfilerStep(2, ts_us=1000, dur_us=3000),
                         ProfilerStep(3, ts_us=4000, dur_us=2000), CpuOp("aten::add", ts_us=4100, dur_us=10)])
    rows = side(load_trace(trace)).rows
    median = D.reduce_window(rows, D.DiffOptions(window="median"))
    assert median.steps == (3,) and median.median_step_ns == 2_000_000
    assert median.rows.set_index("key").loc["aten::add", "dur"] == 10_000
    every = D.reduce_window(rows)
    assert every.steps == (1, 2, 3) and every.median_step_ns == 2_000_000
    assert every.totals["width"] == pytest.approx(2_000_000)            # mean per step
    assert every.rows.set_index("key").loc["aten::add", "dur"] == pytest.approx(10_000 / 3)
    with pytest.raises(KinetoSqlError, match=r"ProfilerStep#7 is not in the trace \(steps: 1, 2, 3\)"):
        D.reduce_window(rows, D.DiffOptions(window="step", step=7))


@pytest.mark.parametrize(("name", "short"), [
    ("aten::to", "aten::to"),
    ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pageable -> Device)"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<int>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<int>, at::detail::Array<char*, 3>)",
     "vectorized_elementwise_kernel<...>"),
    ("void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, float const*)",
     "wgrad_alg0_engine<float, ...>"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "ncclKernel_AllReduce_RING_LL_Sum_float"),
    ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "enumerate(DataLoader)#_SingleProc..."),
])
def test_short_name_fits(name, short):
    assert D.short_name(name, 38 if "nccl" in name else 36) == short


def test_cli_fail_on_regression_and_json(tmp_path):
    fast, slow = job(600, "k", 0, 50).write(tmp_path, "fast.json.gz"), job(1000, "k", 300, 50).write(tmp_path,
                                                                                                         "slow.json.gz")
    # two steps a side: the point change is said, but no interval, so the gate does not judge: exit 3, not 0
    # (a CI job must not read "could not tell" as passed) and not 1 (nothing was found slower beyond noise)
    regressed = CliRunner().invoke(cli, ["diff", str(fast), str(slow), "--fail-on-regression", "10"])
    assert regressed.exit_code == 3, regressed.output
    assert regressed.stdout.startswith("AFTER is 66.7% slower")
    assert regressed.stderr.splitlines()[-1] == (
        "error: regression gate: not judged: BEFORE is too short: 2 steady windows in ProfilerStep#1-#2 "
        "(2 windows); 3 are needed for an interval.")
    ok = CliRunner().invoke(cli, ["diff", str(slow), str(fast), "--fail-on-regression", "10", "--format", "json"])
    assert ok.exit_code == 3, ok.output
    out = json.loads(ok.stdout)["result"]
    assert out["step_change_pct"] == pytest.approx(-40.0) and out["before_steps"] == [1, 2]
    assert sum(out["status_counts"].values()) == len(out["rows"])
    for line in CliRunner().invoke(cli, ["diff", str(slow), str(fast)]).output.splitlines():
        assert len(line) <= 80, line


needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")


@needs_corpus
def test_resnet50_num_workers_pair_says_host_side():
    """tb-plugin ResNet50, DataLoader num_workers 0 vs 4 (MANIFEST: the loader is 40% of the nw0 step)."""
    before = D.side_file(CORPUS / "kineto_tbp_resnet50_nw0_run1623143089861.pt.trace.json.gz")
    after = D.side_file(CORPUS / "kineto_tbp_resnet50_nw4_run1623212756351.pt.trace.json.gz")
    report = D.build_diff(before, after)
    # median step: nw0 steps 164-181 ms (median of 6: 176.1 / 176.5 -> the lower, 176.1), nw4 116-182 ms
    assert report.before.steps == (5, 6, 7, 8, 9, 10) and len(report.after.steps) == 6
    # the verdict of the steady windows (all six a side here), with its interval: tests/test_diff_verdict.py
    assert report.headline.startswith("AFTER is faster by 28.2% (95% CI ")
    assert "the saving is host-side; the largest host change is " \
           "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ -69.3 ms" in report.headline
    top = report.rows.iloc[0]
    assert (top.device, top.status, top["name"]) == ("CPU", "disappeared",
                                                  "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    # the kernels did (almost) the same work: +2% kernel total per step
    kb, ka = report.before.totals["kernel_total"], report.after.totals["kernel_total"]
    assert 0 < (ka - kb) / kb < 0.03


@needs_corpus
def test_hta_trace_compare_pair():
    before = D.side_file(CORPUS / "hta_trace_compare_base.json.gz")
    after = D.side_file(CORPUS / "hta_trace_compare_test.json.gz")
    report = D.build_diff(before, after)
    # trimmed pair: identical step windows (100.3 and 122.1 ms), the test side adds All2All_Pooled_Req
    assert report.headline.startswith("No material change (+0.0%, under the 5% threshold)")
    top = report.rows.iloc[0]
    assert (top.status, top["name"]) == ("appeared", "All2All_Pooled_Req")
