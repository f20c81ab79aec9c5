"""The catalog detectors at their thresholds, on tiny hand-built traces (tests/kineto_builder.py):
each fires exactly at its default threshold and stays silent just under it."""
from __future__ import annotations

from kineto_sql.runner import run_query
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, MemoryEvent, ProfilerStep, PythonFrame
from tests.query_support import load_trace  # noqa: F401  (fixture)

US = 1_000


def run(tp, query_id, **params):
    result = run_query(tp, query_id, params)
    assert result.not_applicable is None, result.not_applicable
    return result.df


def steps(n, width=1000.0, start=0.0, first=None):
    out, ts = [], start
    for i in range(n):
        out.append(ProfilerStep(i + 4, ts_us=ts, dur_us=width))
        ts += width
    return out


# --- sync_forcing_op ---------------------------------------------------------------------------

def sync_trace(n_syncs: int) -> KinetoTrace:
    t = KinetoTrace(steps(1))
    t.add(CpuOp("aten::mm", ts_us=10, dur_us=50), Launch(1, ts_us=20, dur_us=5),
          Kernel(1, ts_us=30, dur_us=100, name="volta_sgemm_128x64_nn"))
    for i in range(n_syncs):
        base = 200 + 100 * i
        t.add(CpuOp("aten::item", ts_us=base, dur_us=60), CpuOp("aten::_local_scalar_dense", ts_us=base + 1, dur_us=58),
              Launch(10 + i, ts_us=base + 5, dur_us=50, name="cudaStreamSynchronize"))
    return t


def test_sync_forcing_op_counts_syncs_per_step(load_trace):
    df = run(load_trace(sync_trace(2)), "catalog.sync_forcing_op")
    assert df[["step", "sync_count", "source", "ops"]].values.tolist() == [[4, 2, "runtime", "aten::item x2"]]
    assert df.blocked_dur[0] == 100 * US


def test_sync_forcing_op_threshold(load_trace):
    tp = load_trace(sync_trace(1))
    assert len(run(tp, "catalog.sync_forcing_op")) == 1
    assert len(run(tp, "catalog.sync_forcing_op", min_per_step=2)) == 0


def test_sync_forcing_op_cpu_only_host_reads(load_trace):
    t = KinetoTrace(steps(2))
    t.add(CpuOp("aten::item", ts_us=100, dur_us=10), CpuOp("aten::_local_scalar_dense", ts_us=101, dur_us=8),
          CpuOp("aten::to", ts_us=1100, dur_us=10))
    df = run(load_trace(t), "catalog.sync_forcing_op")
    assert df[["step", "sync_count", "source"]].values.tolist() == [[4, 1, "host_read"]]


# --- input_bound / dataloader_workers_missing ----------------------------------------------------

def loader_trace(next_us: float, kind: str) -> KinetoTrace:
    t = KinetoTrace(steps(1))
    t.add(CpuOp(f"enumerate(DataLoader)#_{kind}DataLoaderIter.__next__", ts_us=1, dur_us=next_us,
                cat="user_annotation"),
          CpuOp("aten::mm", ts_us=next_us + 10, dur_us=100))
    return t


def test_input_bound_at_share_threshold(load_trace):
    assert len(run(load_trace(loader_trace(300, "SingleProcess")), "catalog.input_bound")) == 1
    assert len(run(load_trace(loader_trace(299, "SingleProcess")), "catalog.input_bound")) == 0


def test_input_bound_leaves_worker_waits_to_workers_missing(load_trace):
    tp = load_trace(loader_trace(400, "MultiProcessing"))
    assert len(run(tp, "catalog.input_bound")) == 0
    df = run(tp, "catalog.dataloader_workers_missing")
    assert df.step.tolist() == [4] and round(df.loader_pct[0]) == 40


def test_dataloader_workers_missing_threshold(load_trace):
    assert len(run(load_trace(loader_trace(99, "MultiProcessing")), "catalog.dataloader_workers_missing")) == 0
    assert len(run(load_trace(loader_trace(100, "MultiProcessing")), "catalog.dataloader_workers_missing")) == 1


# --- small_op_storm --------------------------------------------------------------------------------

def storm_trace(n_ops: int, op_us: float = 2.0) -> KinetoTrace:
    t = KinetoTrace(steps(1, width=5000))
    t.add(*[CpuOp("aten::mul", ts_us=1 + 4.5 * i, dur_us=op_us) for i in range(n_ops)])
    return t


def test_small_op_storm_at_threshold(load_trace):
    assert len(run(load_trace(storm_trace(1000)), "catalog.small_op_storm")) == 1
    assert len(run(load_trace(storm_trace(999)), "catalog.small_op_storm")) == 0


def test_small_op_storm_compute_bound_gpu_is_silent(load_trace):
    t = storm_trace(1000)
    t.add(Launch(1, ts_us=10, dur_us=1), Kernel(1, ts_us=20, dur_us=4900, name="big_gemm"))
    assert len(run(load_trace(t), "catalog.small_op_storm")) == 0


# --- unoverlapped_allreduce ------------------------------------------------------------------------

def ddp_trace(collective_start: float) -> KinetoTrace:
    t = KinetoTrace(steps(1))
    t.add(CpuOp("autograd::engine::evaluate_function: AddmmBackward0", ts_us=100, dur_us=400),
          CpuOp("gloo:all_reduce", ts_us=collective_start, dur_us=100, tid=2))
    return t


def test_unoverlapped_allreduce_after_backward(load_trace):
    df = run(load_trace(ddp_trace(520)), "catalog.unoverlapped_allreduce")
    assert df[["step", "overlap_pct", "after_backward_pct"]].values.tolist() == [[4, 0.0, 100.0]]


def test_unoverlapped_allreduce_overlap_threshold(load_trace):
    # 10 us of the 100 us collective under backward = 10 %: fires at the default 10 %; 11 % does not
    assert len(run(load_trace(ddp_trace(490)), "catalog.unoverlapped_allreduce")) == 1
    assert len(run(load_trace(ddp_trace(489)), "catalog.unoverlapped_allreduce")) == 0


# --- straggler_rank ----------------------------------------------------------------------------------

def rank_trace(wait_us: float) -> KinetoTrace:
    t = KinetoTrace(steps(1), metadata={"distributedInfo": {"backend": "gloo", "rank": 1, "world_size": 2}})
    t.add(CpuOp("aten::mm", ts_us=10, dur_us=200),
          CpuOp("gloo:all_reduce", ts_us=300, dur_us=wait_us, tid=2, args={"Rank": 1}))
    return t


def test_straggler_rank_waiting_rank_fires_at_ratio(load_trace):
    df = run(load_trace(rank_trace(300)), "catalog.straggler_rank")
    assert df[["rank", "wait_to_compute"]].values.tolist() == [[1, 1.5]]
    assert df.step.isna().all()
    assert len(run(load_trace(rank_trace(299)), "catalog.straggler_rank")) == 0


# --- implicit_dtype_casts -----------------------------------------------------------------------------

def gemm(name, ts, dtype):
    types = ["", dtype, dtype] if name == "aten::addmm" else [dtype, dtype]
    return CpuOp(name, ts_us=ts, dur_us=20, args={"Input type": types})


def test_implicit_dtype_casts_fp32_gemm_in_bf16_run(load_trace):
    t = KinetoTrace(steps(1))
    t.add(gemm("aten::addmm", 10, "c10::BFloat16"),
          CpuOp("aten::_to_copy", ts_us=50, dur_us=5, args={"Input type": ["c10::BFloat16", "Scalar"]}),
          gemm("aten::mm", 60, "float"))
    df = run(load_trace(t), "catalog.implicit_dtype_casts")
    assert df[["fp32_gemm_count", "low_precision_gemm_count", "upcast_count"]].values.tolist() == [[1, 1, 1]]


def test_implicit_dtype_casts_pure_fp32_run_is_silent(load_trace):
    t = KinetoTrace(steps(1)).add(gemm("aten::mm", 10, "float"), gemm("aten::mm", 60, "float"))
    assert len(run(load_trace(t), "catalog.implicit_dtype_casts")) == 0


# --- optimizer_step_dominance -------------------------------------------------------------------------

def optimizer_trace(n_ops: int, fused: bool = False) -> KinetoTrace:
    t = KinetoTrace(steps(1, width=10000))
    t.add(CpuOp("Optimizer.step#Adam.step", ts_us=5000, dur_us=4000, cat="user_annotation"))
    t.add(*[CpuOp("aten::add_", ts_us=5001 + 7 * i, dur_us=5) for i in range(n_ops)])
    if fused:
        t.add(CpuOp("aten::_fused_adam_", ts_us=8900, dur_us=50))
    return t


def test_optimizer_step_dominance_at_threshold(load_trace):
    df = run(load_trace(optimizer_trace(500)), "catalog.optimizer_step_dominance")
    assert df[["small_op_count", "foreach_fused_count"]].values.tolist() == [[500, 0]]
    assert round(df.share_pct[0]) == 40
    assert len(run(load_trace(optimizer_trace(499)), "catalog.optimizer_step_dominance")) == 0


def test_optimizer_step_dominance_fused_is_silent(load_trace):
    assert len(run(load_trace(optimizer_trace(520, fused=True)), "catalog.optimizer_step_dominance")) == 0


# --- activation_checkpoint_surprise -------------------------------------------------------------------

def ckpt_trace(recompute: int, frames: bool = False) -> KinetoTrace:
    t = KinetoTrace(steps(1, width=2000))
    t.add(CpuOp("aten::linear", ts_us=10, dur_us=50), CpuOp("aten::linear", ts_us=100, dur_us=50),
          CpuOp("autograd::engine::evaluate_function: AddmmBackward0", ts_us=500, dur_us=1000))
    for i in range(recompute):
        t.add(CpuOp("aten::linear", ts_us=510 + 100 * i, dur_us=50))
    if frames:
        t.add(PythonFrame("torch/utils/checkpoint.py(1000): unpack_hook", ts_us=505, dur_us=400))
    return t


def test_activation_checkpoint_recompute_present(load_trace):
    df = run(load_trace(ckpt_trace(2)), "catalog.activation_checkpoint_surprise")
    assert df[["kind", "recompute_op_count", "forward_op_count"]].values.tolist() == [["recompute_present", 2, 2]]
    assert len(run(load_trace(ckpt_trace(1)), "catalog.activation_checkpoint_surprise")) == 0


def test_activation_checkpoint_expected_recompute_and_missing(load_trace):
    tp = load_trace(ckpt_trace(2))
    assert len(run(tp, "catalog.activation_checkpoint_surprise", expect_recompute=True)) == 0
    df = run(load_trace(ckpt_trace(0, frames=True)), "catalog.activation_checkpoint_surprise")
    assert df.kind.tolist() == ["recompute_missing"]


# --- memory_churn ---------------------------------------------------------------------------------------

def test_memory_churn_runtime_malloc_mid_step(load_trace):
    t = KinetoTrace(steps(1)).add(CpuOp("aten::empty", ts_us=10, dur_us=50),
                                  Launch(1, ts_us=20, dur_us=30, name="cudaMalloc"))
    df = run(load_trace(t), "catalog.memory_churn")
    assert df[["runtime_call_count", "runtime_call_dur"]].values.tolist() == [[1, 30 * US]]


def test_memory_churn_cpu_large_allocs_threshold(load_trace):
    mb = 1 << 20

    def trace(n):
        t = KinetoTrace(steps(1))
        total = 0
        for i in range(n):
            size = (1 + i % 2) * mb
            total += size
            t.add(MemoryEvent(ts_us=10 + 20 * i, bytes=size, total_allocated=total, total_reserved=0, device_type=0,
                              device_id=-1))
        return t

    assert len(run(load_trace(trace(4)), "catalog.memory_churn")) == 1
    assert len(run(load_trace(trace(3)), "catalog.memory_churn")) == 0


# --- gc_gil_stall ----------------------------------------------------------------------------------------

def test_gc_gil_stall_at_threshold(load_trace):
    def trace(gc_us):
        return KinetoTrace(steps(1, width=5000)).add(CpuOp("aten::mm", ts_us=10, dur_us=100),
                                                     PythonFrame("Python GC", ts_us=200, dur_us=gc_us),
                                                     CpuOp("aten::mm", ts_us=4000, dur_us=100))
    df = run(load_trace(trace(1000)), "catalog.gc_gil_stall")
    assert df[["gc_count", "gc_dur"]].values.tolist() == [[1, 1000 * US]]
    assert len(run(load_trace(trace(999)), "catalog.gc_gil_stall")) == 0


def test_gc_gil_stall_gap_without_gc_only_on_request(load_trace):
    t = KinetoTrace(steps(1, width=20000)).add(CpuOp("aten::mm", ts_us=10, dur_us=100),
                                               CpuOp("aten::mm", ts_us=10000, dur_us=100))
    tp = load_trace(t)
    assert len(run(tp, "catalog.gc_gil_stall")) == 0
    df = run(tp, "catalog.gc_gil_stall", gaps_without_gc=True)
    assert df[["gap_count", "gap_max_dur"]].values.tolist() == [[1, 9890 * US]]


# --- schedule_distortion -------------------------------------------------------------------------------------

def test_schedule_distortion_few_steps_and_step_zero(load_trace):
    t = KinetoTrace([ProfilerStep(0, ts_us=0, dur_us=3000), ProfilerStep(1, ts_us=3000, dur_us=1000)])
    df = run(load_trace(t), "catalog.schedule_distortion")
    assert sorted(df.kind) == ["cold_first_step", "few_steps", "step_zero"]


def test_schedule_distortion_cold_ratio(load_trace):
    def trace(first_us):
        return KinetoTrace([ProfilerStep(4, ts_us=0, dur_us=first_us), ProfilerStep(5, ts_us=5000, dur_us=1000),
                            ProfilerStep(6, ts_us=6000, dur_us=1000)])
    assert run(load_trace(trace(2000)), "catalog.schedule_distortion").kind.tolist() == ["cold_first_step"]
    assert len(run(load_trace(trace(1999)), "catalog.schedule_distortion")) == 0


# --- record_function_absence -------------------------------------------------------------------------------

def test_record_function_absence_coverage_threshold(load_trace):
    def trace(covered_us):
        return KinetoTrace(steps(1)).add(CpuOp("phase:forward", ts_us=0, dur_us=covered_us, cat="user_annotation"),
                                         CpuOp("Optimizer.step#SGD.step", ts_us=900, dur_us=90, cat="user_annotation"))
    assert len(run(load_trace(trace(500)), "catalog.record_function_absence")) == 1
    assert len(run(load_trace(trace(501)), "catalog.record_function_absence")) == 0


# --- with_stack_overhead ------------------------------------------------------------------------------------

def test_with_stack_overhead_threshold(load_trace):
    def trace(frames):
        return KinetoTrace(steps(1)).add(*[PythonFrame(f"m.py({i}): f", ts_us=1 + 4 * i, dur_us=2)
                                           for i in range(frames)])
    df = run(load_trace(trace(200)), "catalog.with_stack_overhead")
    assert df[["python_frame_count", "overhead_pct"]].values.tolist() == [[200, 20.0]]
    assert len(run(load_trace(trace(199)), "catalog.with_stack_overhead")) == 0


# --- cuda_graph_regions -------------------------------------------------------------------------------------

def test_cuda_graph_regions_one_launch_many_kernels(load_trace):
    t = KinetoTrace(steps(1)).add(CpuOp("aten::mm", ts_us=10, dur_us=20), Launch(1, ts_us=12, dur_us=5),
                                  Kernel(1, ts_us=40, dur_us=10),
                                  Launch(2, ts_us=100, dur_us=20, name="cudaGraphLaunch"),
                                  Kernel(2, ts_us=130, dur_us=10), Kernel(2, ts_us=145, dur_us=20))
    df = run(load_trace(t), "catalog.cuda_graph_regions")
    assert df[["step", "graph_launch_count", "graph_kernel_count", "graph_gpu_dur"]].values.tolist() == [
        [4, 1, 2, 30 * US]]
    assert round(df.graph_share_pct[0]) == 75


def test_cuda_graph_regions_eager_is_silent(load_trace):
    t = KinetoTrace(steps(1)).add(CpuOp("aten::mm", ts_us=10, dur_us=20), Launch(1, ts_us=12, dur_us=5),
                                  Kernel(1, ts_us=40, dur_us=10))
    assert len(run(load_trace(t), "catalog.cuda_graph_regions")) == 0


# --- compile_graph_breaks -----------------------------------------------------------------------------------

def test_compile_graph_breaks_nested_region_is_a_break(load_trace):
    def trace(broken):
        t = KinetoTrace(steps(1)).add(CpuOp("Torch-Compiled Region: 0/0", ts_us=10, dur_us=500))
        t.add(CpuOp("## Call CompiledFxGraph abc ##", ts_us=20, dur_us=100, cat="user_annotation"))
        if broken:
            t.add(CpuOp("aten::nonzero", ts_us=150, dur_us=30),
                  CpuOp("Torch-Compiled Region: 1/0", ts_us=200, dur_us=200))
        return t
    df = run(load_trace(trace(True)), "catalog.compile_graph_breaks")
    assert df[["break_count", "compiled_call_count", "eager_op_count", "eager_dur"]].values.tolist() == [
        [1, 1, 1, 30 * US]]
    assert len(run(load_trace(trace(False)), "catalog.compile_graph_breaks")) == 0
