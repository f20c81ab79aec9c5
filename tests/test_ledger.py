"""The step-time ledger (reading.step_ledger), its windows (kineto.lib.iterations), the runtime-call
vocabulary (kineto.lib.runtime_calls) and the verdict (reading.verdict): exact rows on builder traces,
and on every golden and corpus trace the buckets of each window sum to the window exactly."""
from __future__ import annotations

from pathlib import Path

import pytest

from kineto_sql.catalog.cases import load_rule_tests
from kineto_sql.run.runner import run_query
from kineto_sql.sql.literals import bind
from tests.conftest import corpus_id, corpus_traces, needs_corpus
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep, PythonFrame, from_case
from tests.query_support import golden_trace_paths, load_trace  # noqa: F401  (fixture)

US = 1_000
GEMM = "volta_sgemm_128x64_nn"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4>()"


def ledger(tp) -> dict[tuple[int, str], int]:
    df = run_query(tp, "reading.step_ledger").df
    return {(int(r.step), r.bucket): int(r.dur) for r in df.itertuples()}


def verdict(tp) -> dict:
    return run_query(tp, "reading.verdict").df.iloc[0].to_dict()


def short_sync_then_long_gap() -> KinetoTrace:
    """A 6 us cudaStreamSynchronize opens a 2.25 ms GPU idle gap that the host spends elsewhere."""
    return KinetoTrace([
        ProfilerStep(4, ts_us=0, dur_us=3000),
        CpuOp("aten::mm", ts_us=0, dur_us=20), Launch(1, ts_us=5, dur_us=5), Kernel(1, ts_us=10, dur_us=90, name=GEMM),
        CpuOp("aten::item", ts_us=99, dur_us=9), Launch(2, ts_us=100, dur_us=6, name="cudaStreamSynchronize"),
        CpuOp("aten::add", ts_us=2340, dur_us=20), Launch(3, ts_us=2345, dur_us=5),
        Kernel(3, ts_us=2352, dur_us=48, name=ELEMENTWISE),
    ])


def test_sync_claims_only_the_idle_that_overlaps_it(load_trace):
    got = ledger(load_trace(short_sync_then_long_gap()))
    assert got == {
        (4, "busy.gemm"): 90 * US,
        (4, "busy.elementwise"): 48 * US,
        (4, "idle.sync"): 6 * US,                 # not the 2252 us gap the sync opened
        (4, "idle.launch"): 10 * US + 12 * US,    # before the first kernel and inside aten::add before its kernel
        (4, "idle.host_compute"): 2 * US + 2232 * US + 600 * US,
    }
    assert sum(got.values()) == 3000 * US


CLAIM_BUCKETS = ("INCLUDE PERFETTO MODULE kineto.lib.ledger_claim; "
                 "SELECT step, device, bucket, kind, dur, is_cold FROM kineto_ledger_claim_buckets(:claims) ORDER BY bucket")
CLAIM_TOTAL = "INCLUDE PERFETTO MODULE kineto.lib.ledger_claim; SELECT step, claim_dur FROM kineto_ledger_claim(:claims)"


@pytest.mark.parametrize(("claims", "want"), [
    ("idle.sync, idle.launch", {"idle.launch": 22 * US, "idle.sync": 6 * US}),
    ("rest of idle.*", {"idle.host_compute": 2834 * US, "idle.launch": 22 * US, "idle.sync": 6 * US}),
    ("busy.*, rest of idle.sync", {"busy.elementwise": 48 * US, "busy.gemm": 90 * US, "idle.sync": 6 * US}),
    ("idle.gc", {}),
])
def test_claim_buckets_is_the_claim_per_bucket_and_sums_to_the_claim(load_trace, claims, want):
    """kineto_ledger_claim_buckets reads the claims grammar (names, `kind.*`, `rest of X`) per lane and
    bucket; kineto_ledger_claim is its total per window (0 where nothing of the claim lies)."""
    tp = load_trace(short_sync_then_long_gap())
    rows = tp.query(bind(CLAIM_BUCKETS, {"claims": claims})).as_pandas_dataframe()
    assert {r.bucket: int(r.dur) for r in rows.itertuples()} == want
    assert set(rows.step) <= {4} and set(rows.device) <= {0} and not rows.is_cold.any()
    assert all(b.startswith(k + ".") for b, k in zip(rows.bucket, rows.kind))
    total = tp.query(bind(CLAIM_TOTAL, {"claims": claims})).as_pandas_dataframe()
    assert [(int(r.step), int(r.claim_dur)) for r in total.itertuples()] == [(4, sum(want.values()))]


def test_pageable_dtoh_async_copy_is_a_blocking_copy(load_trace):
    t = KinetoTrace([
        ProfilerStep(4, ts_us=0, dur_us=1000),
        CpuOp("aten::to", ts_us=190, dur_us=320),
        Launch(5, ts_us=200, dur_us=300, name="cudaMemcpyAsync"),
        Kernel(5, ts_us=210, dur_us=20, name="Memcpy DtoH (Device -> Pageable)", cat="gpu_memcpy"),
        Launch(6, ts_us=600, dur_us=10, name="cudaMemcpyAsync"),
        Kernel(6, ts_us=620, dur_us=20, name="Memcpy HtoD (Pinned -> Device)", cat="gpu_memcpy"),
    ])
    tp = load_trace(t)
    calls = tp.query("INCLUDE PERFETTO MODULE kineto.lib.runtime_calls; "
                     "SELECT correlation, class, name_class, blocks_host, copy_direction, pageable "
                     "FROM kineto_runtime_calls ORDER BY ts").as_pandas_dataframe()
    assert calls.values.tolist() == [[5, "blocking_copy", "async_copy", 1, "DtoH", 1],
                                     [6, "async_copy", "async_copy", 0, "HtoD", 0]]
    got = ledger(tp)
    assert got[(4, "idle.blocking_copy")] == 300 * US - 20 * US   # the call, minus its own copy on the device
    assert got[(4, "busy.copy_dtoh")] == 20 * US and got[(4, "busy.copy_htod")] == 20 * US
    assert "idle.sync" not in {b for _, b in got}


def test_dataloader_wait_at_a_quarter_of_the_step(load_trace):
    t = KinetoTrace([
        ProfilerStep(4, ts_us=0, dur_us=1000),
        CpuOp("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts_us=0, dur_us=250, cat="user_annotation"),
        CpuOp("aten::mm", ts_us=255, dur_us=10), Launch(1, ts_us=256, dur_us=4),
        Kernel(1, ts_us=260, dur_us=740, name=GEMM),
    ])
    got = ledger(load_trace(t))
    assert got == {(4, "idle.dataloader"): 250 * US, (4, "idle.host_compute"): 5 * US,
                   (4, "idle.launch"): 5 * US, (4, "busy.gemm"): 740 * US}


def test_collectives_split_exposed_and_overlapped(load_trace):
    nccl = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
    t = KinetoTrace([
        ProfilerStep(4, ts_us=0, dur_us=700),
        Launch(1, ts_us=1, dur_us=2), Kernel(1, ts_us=100, dur_us=200, name=nccl, stream=20),
        Launch(2, ts_us=3, dur_us=2), Kernel(2, ts_us=300, dur_us=200, name=GEMM),
        Launch(3, ts_us=5, dur_us=2), Kernel(3, ts_us=400, dur_us=200, name=nccl, stream=20),
    ])
    tp = load_trace(t)
    got = ledger(tp)
    assert got[(4, "busy.comm_exposed")] == 200 * US + 100 * US
    assert got[(4, "busy.comm_overlapped")] == 100 * US
    assert got[(4, "busy.gemm")] == 100 * US
    v = verdict(tp)
    # exposed 300 of 700 us (43%) is over 30% and above the idle 0-100 + 600-700 us (29%): communication-bound
    assert v["comm_pct"] == pytest.approx(100 * 300 / 700, abs=0.01)
    assert v["regime"] == "communication-bound"
    assert v["sentence"].startswith("communication-bound: ")


def test_iterations_from_record_function_markers_without_profiler_step(load_trace):
    t = KinetoTrace()
    for i, (start, width) in enumerate([(0, 5000), (5000, 1000), (6000, 1000), (7000, 1200)]):
        t.add(CpuOp("## forward ##", ts_us=start, dur_us=width - 100, cat="user_annotation"),
              CpuOp("aten::mm", ts_us=start + 10, dur_us=20), Launch(i + 1, ts_us=start + 15, dur_us=5),
              Kernel(i + 1, ts_us=start + 30, dur_us=50, name=GEMM))
    # one-time work in the first: 3 ms of cudaMalloc, most of its 4 ms excess (what makes it cold)
    t.add(Launch(99, ts_us=100, dur_us=3000, name="cudaMalloc", tid=2))
    tp = load_trace(t)
    rows = tp.query("INCLUDE PERFETTO MODULE kineto.lib.iterations; "
                    "SELECT step, source, marker, ts, dur, is_cold FROM kineto_iterations ORDER BY ts"
                    ).as_pandas_dataframe()
    assert rows.source.unique().tolist() == ["record_function"]
    assert rows.step.tolist() == [1, 2, 3, 4]
    # record_function ranges: each window is the range itself (its kernel ends inside it), not start to start:
    # what runs between two ranges belongs to no iteration
    assert (rows.dur // US).tolist() == [4900, 900, 900, 1100]
    assert rows.is_cold.tolist() == [1, 0, 0, 0]       # 4900 > 1.5 x median(900, 900, 1100), 3000 >= 4000 / 2
    v = verdict(tp)
    assert v["window_source"] == "record_function" and v["windows"] == 3 and v["cold_windows"] == 1
    assert v["median_window_dur"] == 900 * US
    assert "inferred (record_function)" in v["sentence"] and "1 cold window of 4.900 ms kept apart" in v["sentence"]


def test_median_of_an_even_number_of_windows_is_the_mean_of_the_two_middles(load_trace):
    t = KinetoTrace()
    ts = 0
    for i, width in enumerate([1000, 1200, 1400, 1600]):
        t.add(ProfilerStep(i + 1, ts_us=ts, dur_us=width), Launch(i + 1, ts_us=ts + 1, dur_us=2),
              Kernel(i + 1, ts_us=ts + 5, dur_us=width - 10, name=GEMM))
        ts += width
    v = verdict(load_trace(t))
    assert v["windows"] == 4 and v["cold_windows"] == 0
    assert v["median_window_dur"] == 1300 * US
    assert v["regime"] == "device-bound"


def test_whole_capture_is_one_window_and_cpu_only_gets_a_host_ledger(load_trace):
    t = KinetoTrace([
        CpuOp("aten::mm", ts_us=0, dur_us=600),
        CpuOp("aten::_local_scalar_dense", ts_us=700, dur_us=100),
        CpuOp("aten::add", ts_us=900, dur_us=100),
    ])
    tp = load_trace(t)
    got = ledger(tp)
    assert got == {(1, "host.ops"): 700 * US, (1, "host.sync_read"): 100 * US, (1, "host.unattributed"): 200 * US}
    v = verdict(tp)
    assert v["window_source"] == "capture" and v["device_count"] == 0 and v["regime"] == "host-bound"
    assert "no device activity was recorded" in v["sentence"]


def _assert_ledger_sums(tp, label):
    df = run_query(tp, "reading.step_ledger").df
    assert not df.empty, f"{label}: no ledger rows"
    sums = df.groupby(["window_id", "device"], dropna=False).agg(total=("dur", "sum"), width=("window_dur", "first"))
    bad = sums[sums.total != sums.width]
    assert bad.empty, f"{label}: buckets do not sum to the window: {bad.head()}"
    windows = tp.query("INCLUDE PERFETTO MODULE kineto.lib.iterations; SELECT count(*) AS n FROM kineto_iterations"
                       ).as_pandas_dataframe().n[0]
    assert df.window_id.nunique() == windows, f"{label}: a window has no ledger"
    assert (df.dur > 0).all()


@pytest.mark.parametrize("path", golden_trace_paths(), ids=lambda p: p.name)
def test_ledger_sums_to_every_window_on_golden(path, loaded):
    _assert_ledger_sums(loaded(path), path.name)


@needs_corpus
@pytest.mark.parametrize("path", corpus_traces(), ids=corpus_id)
def test_ledger_sums_to_every_window_on_the_corpus(path, loaded):
    _assert_ledger_sums(loaded(path), corpus_id(path))


def test_a_gc_pause_in_the_first_step_is_gc_not_a_cold_start(load_trace):
    """Issue 12, class 9: a 502 ms-style GC pause made the first step wide; GC time does not count as width
    for the cold test, so the step stays steady and the pause lands in host.gc."""
    t = KinetoTrace()
    ts = 0
    for i, width in enumerate([3000, 1000, 1000, 1000]):
        t.add(ProfilerStep(i + 1, ts_us=ts, dur_us=width), CpuOp("aten::mm", ts_us=ts + 10, dur_us=900))
        ts += width
    t.add(CpuOp("Python GC", ts_us=1000, dur_us=2000, cat="python_function"))
    tp = load_trace(t)
    got = ledger(tp)
    assert got[(1, "host.gc")] == 2000 * US
    v = verdict(tp)
    assert v["cold_windows"] == 0 and v["windows"] == 4
    assert v["top_cause"] == "host.gc"


def launch_overhead_and_host_compute(wrapper: str) -> KinetoTrace:
    """Three device idle gaps in one 2 ms step: 0-925 us inside aten::linear, whose aten::addmm launches
    only at 910 us (the outer op goes on to launch); 1025-1625 us with a preprocessing frame and a CPU
    aten::cat on the stack (nothing there launches); 1650-1915 us inside a compiled region's wrapper,
    between its two launches."""
    if wrapper.endswith(": call"):
        frame = PythonFrame(wrapper, ts_us=1600, dur_us=350)
    else:
        frame = CpuOp(wrapper, ts_us=1600, dur_us=350, cat="user_annotation")
    return KinetoTrace([
        ProfilerStep(4, ts_us=0, dur_us=2000),
        CpuOp("aten::linear", ts_us=0, dur_us=1000),
        CpuOp("aten::t", ts_us=10, dur_us=20),
        CpuOp("aten::addmm", ts_us=900, dur_us=80), Launch(1, ts_us=910, dur_us=10),
        Kernel(1, ts_us=925, dur_us=100, name=GEMM),
        PythonFrame("train.py(40): preprocess", ts_us=1100, dur_us=500),
        CpuOp("aten::cat", ts_us=1150, dur_us=350),
        frame,
        Launch(2, ts_us=1610, dur_us=10, name="cuLaunchKernel"), Kernel(2, ts_us=1625, dur_us=25, name=ELEMENTWISE),
        Launch(3, ts_us=1900, dur_us=10, name="cuLaunchKernel"), Kernel(3, ts_us=1915, dur_us=25, name=ELEMENTWISE),
    ])


@pytest.mark.parametrize("wrapper", [
    "## Call CompiledFxGraph fabc123 ##",
    "/tmp/torchinductor_user/ab/cabc123.py(48): call",
    "Torch-Compiled Region: 0/0",
    "CompiledFunction",
])
def test_launch_overhead_is_not_host_compute(load_trace, wrapper):
    """A gap with a launching op on the host stack (an op with a launch anywhere beneath it, or a compiled
    region's wrapper between its launches) is launch overhead; host compute is what has no launching op
    on the stack."""
    got = ledger(load_trace(launch_overhead_and_host_compute(wrapper)))
    assert got == {
        (4, "busy.gemm"): 100 * US,
        (4, "busy.elementwise"): 50 * US,
        # 0-925 under aten::linear; 1600-1625, 1650-1915 and 1940-1950 under the wrapper
        (4, "idle.launch"): 925 * US + 25 * US + 265 * US + 10 * US,
        # 1025-1100 (only the step open), 1100-1600 (preprocessing), 1950-2000 (only the step)
        (4, "idle.host_compute"): 75 * US + 500 * US + 50 * US,
    }


def test_an_annotation_that_is_no_compiled_wrapper_stays_host_compute(load_trace):
    """The same gap between two launches under an ordinary record_function range: nothing on the stack
    is a launching op, so all but the launch calls themselves is host compute."""
    got = ledger(load_trace(launch_overhead_and_host_compute("## my_region ##")))
    assert got[(4, "idle.launch")] == 925 * US + 10 * US + 10 * US  # the two launch calls, 1610-1620 and 1900-1910
    assert got[(4, "idle.host_compute")] == 75 * US + 500 * US + 15 * US + 255 * US + 60 * US
    assert sum(got.values()) == 2000 * US


def test_kernel_mix_busy_share_is_the_verdicts_compute_share(load_trace):
    """One number per quantity: the device rule's busy share is the verdict's compute share (both read
    kineto.lib.device_compute), here 1000 us of kernels in a 1250 us step."""
    sql = Path(__file__).parents[1] / "queries/kineto/catalog/kernel_mix.sql"
    case = load_rule_tests("catalog.kernel_mix", sql).case("busy_share_is_the_verdicts")
    tp = load_trace(from_case(list(case.events)))
    mix = run_query(tp, "catalog.kernel_mix").df
    assert list(mix.busy_pct) == [80.0]
    assert verdict(tp)["compute_pct"] == 80.0
