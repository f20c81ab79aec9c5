"""Exact rows of the beginner's-guide indicators (queries/kineto/guide/) on hand-built traces."""
from __future__ import annotations

from kineto_sql.run.runner import run_query
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep
from tests.query_support import load_trace  # noqa: F401  (fixture)

US = 1_000


def _rows(df, *cols):
    df = df.astype(object).where(df.notna(), None)
    return [tuple(getattr(r, c) for c in cols) for r in df.itertuples(index=False)]


def test_cold_start(load_trace):
    trace = KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=300),
        CpuOp("aten::zeros_like", ts_us=10, dur_us=100),
        Launch(correlation=1, ts_us=20, dur_us=50, name="cudaMalloc", flow=False),
        CpuOp("aten::mm", ts_us=150, dur_us=10),
        ProfilerStep(2, ts_us=300, dur_us=100),
        CpuOp("aten::mm", ts_us=310, dur_us=10),
        ProfilerStep(3, ts_us=400, dur_us=120),
        CpuOp("aten::mm", ts_us=410, dur_us=10),
    ])
    df = run_query(load_trace(trace), "guide.cold_start").df
    assert _rows(df, "first_step", "first_dur", "median_rest_dur", "factor", "extra_dur", "rest_steps", "is_cold",
                 "mallocs_first", "first_only_ops", "first_only_examples") == [
        (1, 300 * US, 110 * US, 2.73, 190 * US, 2, 1, 1, 1, "aten::zeros_like x1")]
    assert "1 device allocator calls" in df.evidence[0]


def test_cold_start_warm(load_trace):
    trace = KinetoTrace([ProfilerStep(4, 0, 100), ProfilerStep(5, 100, 100), CpuOp("aten::mm", 110, 10)])
    df = run_query(load_trace(trace), "guide.cold_start").df
    assert _rows(df, "first_step", "factor", "is_cold") == [(4, 1.0, 0)]


def gpu_trace() -> KinetoTrace:
    return KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=500),
        CpuOp("aten::mm", ts_us=10, dur_us=100),
        Launch(correlation=50, ts_us=20, dur_us=5, name="cudaOccupancyMaxActiveBlocksPerMultiprocessor", flow=False),
        Launch(correlation=1, ts_us=30, dur_us=10),
        Kernel(correlation=1, ts_us=50, dur_us=100, name="volta_sgemm_128x64_nn"),
        CpuOp("aten::add", ts_us=200, dur_us=20),
        Launch(correlation=2, ts_us=205, dur_us=10),
        Kernel(correlation=2, ts_us=220, dur_us=10, name="add_kernel"),
        ProfilerStep(2, ts_us=500, dur_us=500),
        CpuOp("aten::add", ts_us=600, dur_us=20),
        Launch(correlation=3, ts_us=605, dur_us=10),
        Kernel(correlation=3, ts_us=620, dur_us=30, name="add_kernel"),
        CpuOp("aten::add", ts_us=700, dur_us=20),
        Launch(correlation=4, ts_us=705, dur_us=10),
        Kernel(correlation=4, ts_us=720, dur_us=10, name="add_kernel"),
        Launch(correlation=5, ts_us=1100, dur_us=40, name="cudaDeviceSynchronize", flow=False),
        Kernel(correlation=6, ts_us=1090, dur_us=30, name="late_kernel"),
    ])


def test_heavyweight_launches(load_trace):
    df = run_query(load_trace(gpu_trace()), "guide.heavyweight_launches").df
    assert _rows(df, "op_name", "kernel", "queried_launches", "launches", "occupancy_dur", "kernel_dur") == [
        ("aten::mm", "volta_sgemm_128x64_nn", 1, 1, 5 * US, 100 * US)]


def test_profiler_flush_sync(load_trace):
    df = run_query(load_trace(gpu_trace()), "guide.profiler_flush_sync").df
    assert _rows(df, "ts", "dur", "name", "pending_activities", "pending_dur", "after_last_step_dur") == [
        (1100 * US, 40 * US, "cudaDeviceSynchronize", 1, 20 * US, 100 * US)]


def test_kernel_runtime_variance(load_trace):
    df = run_query(load_trace(gpu_trace()), "guide.kernel_runtime_variance").df
    assert _rows(df, "kernel", "count", "steps", "mean_dur", "min_dur", "max_dur", "cv", "variable") == [
        ("add_kernel", 3, 2, 16667, 10 * US, 30 * US, 0.566, 1)]


def test_dispatch_chain(load_trace):
    df = run_query(load_trace(gpu_trace()), "guide.dispatch_chain", {"name": "aten::mm"}).df
    assert _rows(df, "step", "top_op", "op", "runtime_call", "kernel", "chain") == [
        (1, "aten::mm", "aten::mm", "cudaLaunchKernel", "volta_sgemm_128x64_nn",
         "aten::mm -> cudaLaunchKernel -> volta_sgemm_128x64_nn")]


def test_overhead_vs_compute(load_trace):
    df = run_query(load_trace(gpu_trace()), "guide.overhead_vs_compute").df
    steps = _rows(df[df.level == "step"], "step", "self_device_dur", "reading")
    assert steps == [(1, 110 * US, "overhead-bound"), (2, 40 * US, "overhead-bound")]
    ops = dict(_rows(df[df.level == "op"], "name", "reading"))
    assert ops["aten::mm"] == "compute-bound" and ops["cudaLaunchKernel"] == "cpu-only op"


def test_activity_buffer_gaps(load_trace):
    trace = gpu_trace()
    trace.add(CpuOp("Activity Buffer Request", ts_us=230, dur_us=100, cat="overhead", pid=0, tid=0))
    df = run_query(load_trace(trace), "guide.activity_buffer_gaps").df
    assert _rows(df, "kind", "device", "ts", "dur", "buffer_dur", "buffer_requests") == [
        ("initial_offset", 0, 0, 50 * US, 0, 0),
        ("buffer_gap", 0, 230 * US, 390 * US, 100 * US, 1)]


def test_addmm_bias_copy_and_compile_regions(load_trace):
    trace = KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=500),
        CpuOp("TorchDynamo Cache Lookup", ts_us=5, dur_us=5),
        CpuOp("Torch-Compiled Region: 0/0", ts_us=10, dur_us=200),
        CpuOp("AOTDispatcher Runtime Wrapper Prologue", ts_us=15, dur_us=5),
        CpuOp("## Call CompiledFxGraph fabc ##", ts_us=30, dur_us=150, cat="user_annotation"),
        CpuOp("aten::addmm", ts_us=40, dur_us=100),
        CpuOp("aten::copy_", ts_us=45, dur_us=20),
        Launch(correlation=1, ts_us=50, dur_us=5, name="cudaMemcpyAsync"),
        Kernel(correlation=1, ts_us=60, dur_us=4, name="Memcpy DtoD (Device -> Device)", cat="gpu_memcpy"),
        Launch(correlation=2, ts_us=70, dur_us=5),
        Kernel(correlation=2, ts_us=80, dur_us=50, name="sm90_xmma_gemm_bias"),
    ])
    tp = load_trace(trace)
    df = run_query(tp, "guide.addmm_bias_copy").df
    assert _rows(df, "step", "compiled", "copy_op_dur", "device_copy", "device_copy_dur", "gemm_kernel", "gemm_dur") == [
        (1, 1, 20 * US, "Memcpy DtoD (Device -> Device)", 4 * US, "sm90_xmma_gemm_bias", 50 * US)]
    df = run_query(tp, "guide.compile_regions").df
    assert _rows(df, "step", "region", "cache_lookup_dur", "prologue_dur", "graph", "graph_dur", "ops",
                 "overhead_dur", "device_dur", "reading") == [
        (1, "Torch-Compiled Region: 0/0", 5 * US, 5 * US, "## Call CompiledFxGraph fabc ##", 150 * US, 2,
         55 * US, 54 * US, "overhead-dominated")]
