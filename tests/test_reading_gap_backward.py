"""Exact rows of reading.gap_attribution, reading.gap_totals and reading.backward_sanity on hand-built traces."""
from __future__ import annotations

from kineto_sql.run.runner import run_query
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep, PythonFrame
from tests.query_support import load_trace  # noqa: F401  (fixture)

US = 1_000
DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def gap_trace() -> KinetoTrace:
    """One step (0-1000 us) with five device gaps: input, sync, launch-bound, nothing, and one clipped at
    the step end."""
    return KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("aten::relu", ts_us=1, dur_us=5),
        Launch(correlation=1, ts_us=2, dur_us=2),
        Kernel(correlation=1, ts_us=5, dur_us=10, name="relu_kernel"),
        CpuOp(DL, ts_us=10, dur_us=190, cat="user_annotation"),
        CpuOp("aten::mm", ts_us=205, dur_us=10),
        Launch(correlation=2, ts_us=206, dur_us=4),
        Kernel(correlation=2, ts_us=212, dur_us=138, name="volta_sgemm_128x64_nn"),
        CpuOp("aten::item", ts_us=265, dur_us=135),
        CpuOp("aten::_local_scalar_dense", ts_us=266, dur_us=133),
        Launch(correlation=3, ts_us=267, dur_us=3, name="cudaMemcpyAsync"),
        Kernel(correlation=3, ts_us=350, dur_us=5, name="Memcpy DtoH (Device -> Pageable)", cat="gpu_memcpy"),
        Launch(correlation=90, ts_us=271, dur_us=85, name="cudaStreamSynchronize", flow=False),
        CpuOp("aten::add", ts_us=450, dur_us=10),
        Launch(correlation=4, ts_us=452, dur_us=3),
        Kernel(correlation=4, ts_us=457, dur_us=13, name="add_kernel"),
        CpuOp("aten::mul", ts_us=470, dur_us=90),
        Launch(correlation=5, ts_us=550, dur_us=5),
        Kernel(correlation=5, ts_us=558, dur_us=12, name="mul_kernel"),
        PythonFrame("gc.py(5): collect", ts_us=600, dur_us=250),
        CpuOp("aten::sub", ts_us=880, dur_us=10),
        Launch(correlation=6, ts_us=881, dur_us=4),
        Kernel(correlation=6, ts_us=900, dur_us=10, name="sub_kernel"),
        CpuOp("aten::div", ts_us=1050, dur_us=10),
        Launch(correlation=7, ts_us=1051, dur_us=3),
        Kernel(correlation=7, ts_us=1100, dur_us=10, name="div_kernel"),
    ])


def test_gap_attribution_rows(load_trace):
    df = run_query(load_trace(gap_trace()), "reading.gap_attribution").df
    got = [(r.step, r.device, r.ts, r.dur, r.cause, r.op, r.sync_call, r.host_busy_pct, r.next_kernel, r.next_op)
           for r in df.astype(object).where(df.notna(), None).itertuples(index=False)]
    assert got == [
        (1, 0, 15 * US, 197 * US, "input", DL, None, 3.6, "volta_sgemm_128x64_nn", "aten::mm"),
        (1, 0, 355 * US, 102 * US, "sync", "aten::item", "cudaStreamSynchronize under aten::_local_scalar_dense",
         51.0, "add_kernel", "aten::add"),
        (1, 0, 470 * US, 88 * US, "launch", "aten::mul", None, 100.0, "mul_kernel", "aten::mul"),
        (1, 0, 570 * US, 330 * US, "none", "gc.py(5): collect", None, 3.0, "sub_kernel", "aten::sub"),
        (1, 0, 910 * US, 90 * US, "none", None, None, 0.0, "div_kernel", "aten::div"),
    ]
    assert df.evidence[1] == ("GPU 0 idle 102.0 us in step 1: the host waited in cudaStreamSynchronize under "
                              "aten::item, so the device drained (sync-forcing op)")


def test_gap_attribution_threshold(load_trace):
    df = run_query(load_trace(gap_trace()), "reading.gap_attribution", {"min_gap": "100us"}).df
    assert list(df.cause) == ["input", "sync", "none"]


def test_gap_totals_rows(load_trace):
    df = run_query(load_trace(gap_trace()), "reading.gap_totals").df
    got = [(r.step, r.cause, r.gaps, r.idle_dur, r.pct_of_step, r.top_op, bool(r.is_main_cause))
           for r in df.astype(object).where(df.notna(), None).itertuples(index=False)]
    assert got == [
        (1, "none", 2, 420 * US, 42.0, "gc.py(5): collect", True),
        (1, "input", 1, 197 * US, 19.7, DL, False),
        (1, "sync", 1, 102 * US, 10.2, "aten::item", False),
        (1, "launch", 1, 88 * US, 8.8, "aten::mul", False),
    ]


def test_gap_attribution_needs_gpu(load_trace):
    run = run_query(load_trace(KinetoTrace([ProfilerStep(1, 0, 100), CpuOp("aten::mm", 10, 20)])),
                    "reading.gap_attribution")
    assert run.not_applicable and "gpu" in run.not_applicable


def backward_trace(recompute: bool, checkpoint_frame: bool) -> KinetoTrace:
    events = [
        ProfilerStep(1, ts_us=0, dur_us=1000),
        CpuOp("Optimizer.zero_grad#SGD.zero_grad", ts_us=1, dur_us=5, cat="user_annotation"),
        CpuOp("aten::zero_", ts_us=2, dur_us=2),
        CpuOp("aten::linear", ts_us=10, dur_us=40),
        CpuOp("aten::addmm", ts_us=12, dur_us=36),
        CpuOp("aten::gelu", ts_us=50, dur_us=10),
        CpuOp("aten::linear", ts_us=60, dur_us=40),
        CpuOp("aten::mse_loss", ts_us=100, dur_us=10),
        CpuOp("autograd::engine::evaluate_function: MseLossBackward0", ts_us=200, dur_us=20),
        CpuOp("autograd::engine::evaluate_function: AddmmBackward0", ts_us=220, dur_us=180),
        CpuOp("aten::mm", ts_us=300, dur_us=50),
        CpuOp("Optimizer.step#SGD.step", ts_us=500, dur_us=100, cat="user_annotation"),
        CpuOp("aten::linear", ts_us=510, dur_us=10),
        CpuOp("aten::gelu", ts_us=520, dur_us=10),
    ]
    if recompute:
        events += [CpuOp("aten::linear", ts_us=230, dur_us=30), CpuOp("aten::gelu", ts_us=260, dur_us=10)]
    if checkpoint_frame:
        events.append(PythonFrame("torch/utils/checkpoint.py(1100): unpack_hook", ts_us=225, dur_us=50))
    return KinetoTrace(events)


def _sanity_row(tp):
    df = run_query(tp, "reading.backward_sanity").df
    assert len(df) == 1
    r = df.astype(object).where(df.notna(), None).iloc[0]
    return (r.step, r.fwd_dur, r.bwd_dur, r.bwd_fwd_ratio, r.fwd_ops, r.bwd_nodes, r.recompute_ops,
            r.recompute_dur, r.recompute_sequence, r.checkpoint_marks, r.finding)


def test_backward_sanity_expected_recompute(load_trace):
    assert _sanity_row(load_trace(backward_trace(True, True))) == (
        1, 100 * US, 200 * US, 2.0, 4, 2, 2, 40 * US, "aten::linear, aten::gelu", 1, "recompute_expected")


def test_backward_sanity_surprising_recompute(load_trace):
    assert _sanity_row(load_trace(backward_trace(True, False)))[-3:] == (
        "aten::linear, aten::gelu", 0, "recompute_surprising")


def test_backward_sanity_plain(load_trace):
    row = _sanity_row(load_trace(backward_trace(False, False)))
    assert row[6:] == (0, 0, None, 0, "none")


def test_backward_sanity_missing_recompute(load_trace):
    assert _sanity_row(load_trace(backward_trace(False, True)))[-1] == "recompute_missing"
