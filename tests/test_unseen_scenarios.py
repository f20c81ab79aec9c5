"""Scenarios no other test has seen, one or more per class of error in the step from the step-time ledger to
the findings (the fourteen classes: hand-off to a detector that cannot run, a large bucket without a finding,
launch overhead called host compute, a constant host/device offset, inferred windows on serving captures,
capture validity, double counting, with_stack, cold start and outliers, device-bound with nothing to say,
CPU-only regimes, memory churn, text). They are built with tests/kineto_builder.py in shapes the rules' own
test files do not use: other step lengths and thread layouts, other op and kernel names (ROCm/HIP launches,
Triton and Tensile kernels, MTIA), steps numbered from the schedule's active window, inferred iterations,
serving captures with a tokenizer thread, compiled regions.

Every scenario is diagnosed end to end (diagnose_trace on the loaded trace) and asserts, with its numbers,
where the right finding fires (the #1 costly finding and its mechanism) and where it stays silent (the
fixed twin), and three properties of every diagnosis:
- the verdict and the #1 agree: the idle / host bucket the verdict's sentence names is claimed by the first
  costly finding; a device-bound verdict leads with a device finding;
- every steady ledger bucket of 5% or more has an owner (tests/test_bucket_owners.py's check);
- no two findings claim the same nanosecond (tests/test_claims.py's check).
"""
from __future__ import annotations

import re

import pytest

from kineto_sql.diagnose.model import severity_rank
from kineto_sql.diagnose.render_text import render_text
from kineto_sql.diagnose.run import diagnose_trace
from kineto_sql.fleet.run import diagnose_directory
from kineto_sql.run.runner import run_query
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, MemoryEvent, ProfilerStep, PythonFrame
from tests.query_support import load_trace  # noqa: F401  (fixture)
from tests.test_bucket_owners import unclaimed_buckets
from tests.test_claims import _check as claims_never_overlap

TENSILE_GEMM = "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_GRVW8"
H100_GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
A100_GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"
CLAMP = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar>()"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
INTERNAL = re.compile(r"\b(seed \d+|issue \d+|class \d+|stop \d+)\b", re.I)


# ---------------------------------------------------------------------------------------------- scenarios

def worker_wait_optimizer_windows(wait_us: float) -> KinetoTrace:
    """No ProfilerStep: 4 iterations of 2500 us, each ended by Optimizer.step#Adam.step (the windows are
    inferred); each begins with a multiprocessing DataLoader next() waiting `wait_us` (the GPU idle), then
    three Tensile GEMMs launched by hipLaunchKernel fill the rest."""
    events, corr = [], 1
    for i in range(4):
        s = i * 2500
        events.append(CpuOp("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", ts_us=s + 5,
                            dur_us=wait_us, cat="user_annotation"))
        t, each = s + 10 + wait_us, (2400 - wait_us - 100) / 3
        for _ in range(3):
            events += [CpuOp("aten::mm", ts_us=t, dur_us=12), Launch(corr, ts_us=t + 2, dur_us=6, name="hipLaunchKernel"),
                       Kernel(corr, ts_us=t + 10, dur_us=each - 5, name=TENSILE_GEMM)]
            t += each
            corr += 1
        events.append(CpuOp("Optimizer.step#Adam.step", ts_us=s + 2420, dur_us=60, cat="user_annotation"))
    return KinetoTrace(events)


def starving_forward(forward_kernel_us: float) -> KinetoTrace:
    """ProfilerSteps 11-13 of 4000 us. Forward on the main thread: 30 aten::linear of 60 us, each launching one
    GEMM of `forward_kernel_us` at its end (8 us: the device waits for every launch). Backward on the
    autograd thread (tid 2): 100 launches 5 us apart of 16 us GEMMs, a full queue."""
    events, corr = [], 1
    for k in range(3):
        s = k * 4000
        events.append(ProfilerStep(11 + k, ts_us=s, dur_us=4000))
        t = s + 10
        for _ in range(30):
            events += [CpuOp("aten::linear", ts_us=t, dur_us=60), Launch(corr, ts_us=t + 54, dur_us=5),
                       Kernel(corr, ts_us=t + 62, dur_us=forward_kernel_us,
                              name="sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize64x64x32")]
            corr += 1
            t += 61
        b = t + 20
        events.append(CpuOp("autograd::engine::evaluate_function: MmBackward0", ts_us=b, dur_us=520, tid=2))
        for i in range(100):
            events += [Launch(corr, ts_us=b + 5 + 5 * i, dur_us=4, tid=2),
                       Kernel(corr, ts_us=b + 12 + 16 * i, dur_us=16,
                              name="sm80_xmma_gemm_f16f16_f16f32_f32_nt_n_tilesize128x64x32")]
            corr += 1
    return KinetoTrace(events)


def compiled_region(wrapped: bool) -> KinetoTrace:
    """ProfilerSteps 20-22 of 2000 us, 12 Triton kernels of 40 us each. `wrapped`: the launches
    (hipModuleLaunchKernel) come 150 us apart inside `Torch-Compiled Region: 2/0` > CompiledFunction (the
    wrapper's Python between them). Else the same 1680 us is a preprocessing frame that launches nothing,
    then the 12 launches back to back."""
    events, corr = [], 1
    for k in range(3):
        s = k * 2000
        events.append(ProfilerStep(20 + k, ts_us=s, dur_us=2000))
        if wrapped:
            events += [CpuOp("Torch-Compiled Region: 2/0", ts_us=s + 20, dur_us=1840, cat="user_annotation"),
                       CpuOp("CompiledFunction", ts_us=s + 25, dur_us=1820)]
        else:
            events.append(PythonFrame("augment.py(88): random_resized_crop", ts_us=s + 20, dur_us=1680))
        for i in range(12):
            if wrapped:
                launch, start = s + 170 + 150 * i, s + 178 + 150 * i
            else:
                launch, start = s + 1710 + 10 * i, s + 1718 + 40 * i
            events += [Launch(corr, ts_us=launch, dur_us=6, name="hipModuleLaunchKernel"),
                       Kernel(corr, ts_us=start, dur_us=40, name=f"triton_poi_fused_add_mul_{i}")]
            corr += 1
    return KinetoTrace(events)


def lagging_device(lead_us: float, steps: bool = False) -> KinetoTrace:
    """60 hipLaunchKernel calls 50 us apart under aten::conv2d; every kernel starts `lead_us` after the first
    launch and they run back to back, 400 us each (24 ms). `steps`: the host loop is 3 ProfilerSteps."""
    events = []
    if steps:
        events += [ProfilerStep(5 + k, ts_us=k * 1000, dur_us=1000) for k in range(3)]
    for i in range(60):
        events += [CpuOp("aten::conv2d", ts_us=i * 50 + 1, dur_us=20), Launch(i + 1, ts_us=i * 50 + 5, dur_us=8, name="hipLaunchKernel"),
                   Kernel(i + 1, ts_us=5 + lead_us + 400 * i, dur_us=400, name="igemm_fwd_gtcx2_nhwc_fp16_bx0_ex1_bt128x128x32")]
    return KinetoTrace(events)


def serving(tokenizer: bool) -> KinetoTrace:
    """A serving capture without ProfilerStep: with `tokenizer`, a tokenizer thread (tid 3) runs 300
    `## tokenize ##` ranges of 60 us every 100 us over the first 30 ms; the main thread then serves 4
    batches of 15 ms (50 addmm launches 300 us apart, 250 us GEMMs) and runs 30 ms of shutdown Python after
    the last kernel."""
    events, corr = [], 1
    if tokenizer:
        events += [CpuOp("## tokenize ##", ts_us=i * 100, dur_us=60, tid=3, cat="user_annotation") for i in range(300)]
    for b in range(4):
        for i in range(50):
            t = 30_000 + b * 15_000 + i * 300
            events += [CpuOp("aten::addmm", ts_us=t, dur_us=20), Launch(corr, ts_us=t + 5, dur_us=8),
                       Kernel(corr, ts_us=t + 15, dur_us=250, name=A100_GEMM)]
            corr += 1
    events.append(PythonFrame("server.py(201): shutdown", ts_us=90_010, dur_us=30_000))
    return KinetoTrace(events)


def counter_replay(launch_us: float, counters: bool = True) -> KinetoTrace:
    """3 ProfilerSteps of 6 launches each, every launch `launch_us` long under aten::bmm with no kernel
    recorded; with `counters`, each has a CUPTI range-profiler event with hardware-counter args."""
    events, per = [], launch_us + 400
    events += [ProfilerStep(1 + j, ts_us=j * 6 * per, dur_us=6 * per) for j in range(3)]
    for i in range(18):
        s = i * per + 10
        events += [CpuOp("aten::bmm", ts_us=s, dur_us=launch_us + 300), Launch(500 + i, ts_us=s + 100, dur_us=launch_us)]
        if counters:
            events.append(CpuOp("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", ts_us=s + 150, dur_us=40,
                                cat="cuda_profiler_range",
                                args={"External id": 500 + i, "sm__cycles_elapsed.avg": 81234,
                                      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1 << 20}))
    return KinetoTrace(events)


def pageable_batch_copy(pageable: bool) -> KinetoTrace:
    """ProfilerSteps 40-43 of 2000 us. Each starts with the batch copied to the device by aten::to: a
    cudaMemcpyAsync of a 380 us HtoD copy; from pageable memory the host blocks for it (the device idle,
    nothing queued), pinned it returns in 10 us and the copy overlaps the host's next 380 us of Python. Then
    one 1500 us GEMM."""
    events, corr = [], 1
    for k in range(4):
        s = k * 2000
        events.append(ProfilerStep(40 + k, ts_us=s, dur_us=2000))
        call = 390 if pageable else 10
        events += [CpuOp("aten::to", ts_us=s + 10, dur_us=call + 8), CpuOp("aten::_to_copy", ts_us=s + 11, dur_us=call + 6),
                   CpuOp("aten::copy_", ts_us=s + 12, dur_us=call + 4),
                   Launch(corr, ts_us=s + 13, dur_us=call, name="cudaMemcpyAsync"),
                   Kernel(corr, ts_us=s + 20, dur_us=380, cat="gpu_memcpy",
                          name=f"Memcpy HtoD ({'Pageable' if pageable else 'Pinned'} -> Device)")]
        corr += 1
        if not pageable:
            events.append(PythonFrame("train.py(31): forward", ts_us=s + 30, dur_us=370))
        events += [CpuOp("aten::matmul", ts_us=s + 410, dur_us=30), Launch(corr, ts_us=s + 420, dur_us=8),
                   Kernel(corr, ts_us=s + 430, dur_us=1500, name=H100_GEMM)]
        corr += 1
    return KinetoTrace(events)


def stacked_launch_loop(frames_per_launch: int, steps: bool = True) -> KinetoTrace:
    """3 iterations of 25 launches, each after a chain of `frames_per_launch` nested python frames (2.5 us
    of own time each) and an aten::relu launching a 10 us clamp kernel. `steps`: ProfilerSteps 7-9; else
    each iteration ends in Optimizer.step#SGD.step (inferred windows)."""
    events, corr = [], 1
    per = frames_per_launch * 2.5 + 16
    width = 25 * per + 40
    for k in range(3):
        s = k * width
        if steps:
            events.append(ProfilerStep(7 + k, ts_us=s, dur_us=width))
        t = s + 5
        for _ in range(25):
            events += [PythonFrame(f"model/block.py({100 + f}): forward_{f}", ts_us=t + f * 2.5, dur_us=per - f * 2.5 - 1)
                       for f in range(frames_per_launch)]
            o = t + frames_per_launch * 2.5
            events += [CpuOp("aten::relu", ts_us=o, dur_us=12), Launch(corr, ts_us=o + 3, dur_us=6),
                        Kernel(corr, ts_us=o + 11, dur_us=10, name=CLAMP)]
            corr += 1
            t += per
        if not steps:
            events.append(CpuOp("Optimizer.step#SGD.step", ts_us=s + width - 30, dur_us=25, cat="user_annotation"))
    return KinetoTrace(events)


def first_active_step(kind: str, extra_us: float = 2600) -> KinetoTrace:
    """ProfilerSteps 3-6 (the schedule's wait and warmup took 1-2) of 1800 us, a 1500 us GEMM each. The
    first is `extra_us` wider: `one_time` spends 1800 us in cudaMalloc and 500 us in cuModuleLoadData,
    `gc` a Python GC pass, `python` ordinary Python (a slow first step with no one-time work)."""
    events, corr, ts = [], 1, 0
    for k in range(4):
        width = 1800 + (extra_us if k == 0 else 0)
        events.append(ProfilerStep(3 + k, ts_us=ts, dur_us=width))
        t = ts + 10
        if k == 0:
            if kind == "one_time":
                events += [CpuOp("aten::empty", ts_us=t, dur_us=1820), Launch(9000, ts_us=t + 10, dur_us=1800, name="cudaMalloc"),
                           Launch(9001, ts_us=t + 1840, dur_us=500, name="cuModuleLoadData")]
            else:
                name = "Python GC" if kind == "gc" else "train.py(55): log_metrics"
                events.append(PythonFrame(name, ts_us=t, dur_us=extra_us - 50))
            t += extra_us - 20
        events += [CpuOp("aten::mm", ts_us=t, dur_us=20), Launch(corr, ts_us=t + 5, dur_us=7),
                   Kernel(corr, ts_us=t + 15, dur_us=1500, name=H100_GEMM)]
        corr += 1
        ts += width
    return KinetoTrace(events)


def graph_replay(kind: str) -> KinetoTrace:
    """ProfilerSteps 100-102 of 5000 us. `cuda_graph`: one cudaGraphLaunch per step carrying 24 GEMMs of
    190 us; `mtia`: one runFunction (mtia_runtime) per step carrying one 4560 us fused-graph execution."""
    events, corr = [], 1
    for k in range(3):
        s = k * 5000
        events.append(ProfilerStep(100 + k, ts_us=s, dur_us=5000))
        if kind == "cuda_graph":
            events += [CpuOp("CUDAGraph.replay", ts_us=s + 5, dur_us=40, cat="user_annotation"),
                       Launch(corr, ts_us=s + 10, dur_us=25, name="cudaGraphLaunch")]
            events += [Kernel(corr, ts_us=s + 60 + 190 * i, dur_us=190, name=H100_GEMM) for i in range(24)]
        else:
            events += [Launch(corr, ts_us=s + 10, dur_us=25, name="runFunction", cat="mtia_runtime"),
                       Kernel(corr, ts_us=s + 60, dur_us=4560, name="mtia_exec_fused_graph_3", cat="mtia_ccp_events")]
        corr += 1
    return KinetoTrace(events)


def cpu_training_loop(kind: str) -> KinetoTrace:
    """A CPU-only capture, ProfilerSteps 30-33 of 6000 us. `overhead`: 200 outermost aten::add of 8 us with
    22 us of Python between them; `compute`: 40 aten::conv2d of 140 us, 10 us apart."""
    trace = KinetoTrace()
    for k in range(4):
        s = k * 6000
        trace.add(ProfilerStep(30 + k, ts_us=s, dur_us=6000))
        trace.add(PythonFrame("train.py(77): train_step", ts_us=s + 1, dur_us=5998))
        n, op, dur, gap = (200, "aten::add", 8, 22) if kind == "overhead" else (40, "aten::conv2d", 140, 10)
        for i in range(n):
            trace.add(CpuOp(op, ts_us=s + 5 + i * (dur + gap), dur_us=dur))
    return trace


def cpu_allocations(sizes_mb) -> KinetoTrace:
    """A CPU-only capture, ProfilerSteps 50-53 of 3000 us, an aten::cat of 2800 us each; step k allocates
    the sizes in sizes_mb(k) (profile_memory [memory] events on the CPU)."""
    trace = KinetoTrace()
    for k in range(4):
        s = k * 3000
        trace.add(ProfilerStep(50 + k, ts_us=s, dur_us=3000), CpuOp("aten::cat", ts_us=s + 100, dur_us=2800))
        for j, mb in enumerate(sizes_mb(k)):
            trace.add(MemoryEvent(ts_us=s + 150 + 40 * j, bytes=mb << 20, total_allocated=mb << 20, total_reserved=0,
                                  device_type=0, device_id=-1))
    return trace


def optimizer_loop(foreach: bool) -> KinetoTrace:
    """ProfilerSteps 60-62: a 2000 us GEMM forward, then Optimizer.step#AdamW.step. foreach=False: a
    per-parameter loop of 4 x 150 ops (mul_, add_, addcdiv_, sqrt) of 5 us, 7 us apart, each launching a
    2 us kernel (6500 us steps); foreach: 4 aten::_foreach_* ops, each one 150 us multi-tensor kernel
    (2900 us steps)."""
    events, corr = [], 1
    width = 2900 if foreach else 6500
    for k in range(3):
        s = k * width
        events += [ProfilerStep(60 + k, ts_us=s, dur_us=width), CpuOp("aten::linear", ts_us=s + 5, dur_us=30),
                   Launch(corr, ts_us=s + 10, dur_us=8), Kernel(corr, ts_us=s + 20, dur_us=2000, name=H100_GEMM)]
        corr += 1
        o = s + 2100
        n = 4 if foreach else 600
        events.append(CpuOp("Optimizer.step#AdamW.step", ts_us=o, dur_us=700 if foreach else n * 7 + 20,
                            cat="user_annotation"))
        for i in range(n):
            name = ("aten::mul_", "aten::add_", "aten::addcdiv_", "aten::sqrt")[i % 4]
            if foreach:
                t = o + 5 + 170 * i
                events += [CpuOp(name.replace("aten::", "aten::_foreach_"), ts_us=t, dur_us=20),
                           Launch(corr, ts_us=t + 5, dur_us=8),
                           Kernel(corr, ts_us=t + 15, dur_us=150, name="void at::native::(anonymous namespace)::"
                                  "multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>>()")]
            else:
                t = o + 5 + 7 * i
                events += [CpuOp(name, ts_us=t, dur_us=5), Launch(corr, ts_us=t + 1, dur_us=3),
                           Kernel(corr, ts_us=t + 6, dur_us=2, name=ADD)]
            corr += 1
    return KinetoTrace(events)


def nccl_rank(rank: int, slow_us: float, shapes_differ: bool = False) -> KinetoTrace:
    """One rank of a 3-rank NCCL job, ProfilerSteps 10-12 of 12 ms on a shared clock: a forward GEMM of
    5000 us (rank 2: 5000 + slow_us), then c10d::allreduce_ > record_param_comms launching one all-reduce
    kernel, which on every rank ends 600 us after the last rank arrives. `shapes_differ`: rank 2's aten::mm
    has another input shape (record_shapes)."""
    meta = {"backend": "nccl", "rank": rank, "world_size": 3, "pg_count": 1,
            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 3,
                           "ranks": [0, 1, 2]}]}
    events, corr = [], 1
    for k in range(3):
        s = k * 12000
        work = 5000 + (slow_us if rank == 2 else 0)
        dims = [[4096 + (512 if shapes_differ and rank == 2 else 0), 1024]]
        comm = {"Collective name": "allreduce", "Process Group Name": "0", "Group size": 3, "Seq": k + 1,
                "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20, "dtype": "Float"}
        events += [ProfilerStep(10 + k, ts_us=s, dur_us=12000),
                   CpuOp("aten::mm", ts_us=s + 10, dur_us=30, args={"Input Dims": dims, "Input type": ["c10::BFloat16"]}),
                   Launch(corr, ts_us=s + 15, dur_us=8), Kernel(corr, ts_us=s + 25, dur_us=work, name=H100_GEMM),
                   CpuOp("c10d::allreduce_", ts_us=s + 60, dur_us=40),
                   CpuOp("record_param_comms", ts_us=s + 62, dur_us=30, args=comm),
                   Launch(corr + 1, ts_us=s + 70, dur_us=8),
                   Kernel(corr + 1, ts_us=s + 25 + work, dur_us=5600 + slow_us - work, stream=20, args=comm,
                          name="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)")]
        corr += 2
    return KinetoTrace(events, metadata={"distributedInfo": meta})


def request_loop() -> KinetoTrace:
    """Inference without ProfilerStep: 5 `## request ##` ranges of 6 ms on the main thread, 8 ms apart (the
    server waits for the next request, nothing recorded); each request 40 addmm launches 150 us apart of
    120 us GEMMs (the device 80% busy inside a request)."""
    events, corr = [], 1
    for r in range(5):
        s = r * 14_000
        events.append(CpuOp("## request ##", ts_us=s, dur_us=6000, cat="user_annotation"))
        for i in range(40):
            t = s + 10 + 150 * i
            events += [CpuOp("aten::linear", ts_us=t, dur_us=20), Launch(corr, ts_us=t + 5, dur_us=8),
                       Kernel(corr, ts_us=t + 15, dur_us=120, name=A100_GEMM)]
            corr += 1
    return KinetoTrace(events)


def attention_steps() -> KinetoTrace:
    """ProfilerSteps 200-202 of 4000 us: 8 flash-attention kernels of 330 us and 8 GEMMs of 120 us queued
    back to back at the start of each step (attention 66%, GEMM 24% of the step)."""
    events, corr = [], 1
    flash = ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, "
             "false, false>(Flash_fwd_params)")
    for k in range(3):
        s = k * 4000
        events.append(ProfilerStep(200 + k, ts_us=s, dur_us=4000))
        t = s + 10
        for i in range(8):
            events += [CpuOp("aten::_scaled_dot_product_flash_attention", ts_us=s + 5 + 20 * i, dur_us=15),
                       Launch(corr, ts_us=s + 8 + 20 * i, dur_us=6), Kernel(corr, ts_us=t, dur_us=330, name=flash),
                       CpuOp("aten::linear", ts_us=s + 21 + 20 * i, dur_us=3), Launch(corr + 1, ts_us=s + 22 + 20 * i, dur_us=1),
                       Kernel(corr + 1, ts_us=t + 330, dur_us=120, name=H100_GEMM)]
            corr += 2
            t += 450
    return KinetoTrace(events)


def device_allocations(every_step: bool) -> KinetoTrace:
    """ProfilerSteps 70-73 of 3000 us, a 2400 us GEMM each; a 300 us cudaMalloc before it (reserved memory
    growing 80 MB a step) in every step, or only in the first."""
    events, corr = [], 1
    for k in range(4):
        s = k * 3000
        events.append(ProfilerStep(70 + k, ts_us=s, dur_us=3000))
        t = s + 10
        if every_step or k == 0:
            events += [CpuOp("aten::empty", ts_us=t, dur_us=330), Launch(9000 + k, ts_us=t + 5, dur_us=300, name="cudaMalloc"),
                       MemoryEvent(ts_us=t + 320, bytes=(64 + 16 * k) << 20, total_allocated=(500 + 16 * k) << 20,
                                   total_reserved=(600 + 80 * k) << 20)]
            t += 340
        events += [CpuOp("aten::mm", ts_us=t, dur_us=20), Launch(corr, ts_us=t + 5, dur_us=7),
                   Kernel(corr, ts_us=t + 15, dur_us=2400, name=H100_GEMM)]
        corr += 1
    return KinetoTrace(events)


def compiled_requests(graph_break: bool) -> KinetoTrace:
    """A compiled model served without ProfilerStep: 4 `## request ##` ranges of 2500 us, each one call of
    `Torch-Compiled Region: 0/0` running its graph (8 Triton kernels of 200 us). With `graph_break` the
    region resumes in `Torch-Compiled Region: 1/0` after 300 us of eager aten::nonzero / aten::index."""
    events, corr = [], 1
    for r in range(4):
        s = r * 2500
        events += [CpuOp("## request ##", ts_us=s, dur_us=2400, cat="user_annotation"),
                   CpuOp("Torch-Compiled Region: 0/0", ts_us=s + 10, dur_us=2300),
                   CpuOp("## Call CompiledFxGraph fx0 ##", ts_us=s + 20, dur_us=120, cat="user_annotation")]
        for i in range(8):
            events += [Launch(corr, ts_us=s + 25 + 12 * i, dur_us=6, name="hipModuleLaunchKernel"),
                       Kernel(corr, ts_us=s + 40 + 200 * i, dur_us=200, name=f"triton_red_fused_native_layer_norm_{i}")]
            corr += 1
        if graph_break:
            events += [CpuOp("aten::nonzero", ts_us=s + 160, dur_us=200), CpuOp("aten::index", ts_us=s + 370, dur_us=100),
                       CpuOp("Torch-Compiled Region: 1/0", ts_us=s + 480, dur_us=60)]
    return KinetoTrace(events)


def gloo_loop_without_schedule() -> KinetoTrace:
    """A CPU gloo trainer without ProfilerStep: 3 iterations of 3000 us ended by Optimizer.step#SGD.step, each
    a 1500 us backward (AddmmBackward0) then a 900 us gloo:all_reduce on the communication thread that starts
    after it (no overlap)."""
    events = []
    for k in range(3):
        s = k * 3000
        events += [CpuOp("autograd::engine::evaluate_function: AddmmBackward0", ts_us=s + 100, dur_us=1500),
                   CpuOp("gloo:all_reduce", ts_us=s + 1650, dur_us=900, tid=2, cat="user_annotation"),
                   CpuOp("Optimizer.step#SGD.step", ts_us=s + 2600, dur_us=300, cat="user_annotation")]
    return KinetoTrace(events)


def truncated_record(recorded: int) -> KinetoTrace:
    """ProfilerSteps 1-3 of 3000 us, 20 hipLaunchKernel a step 140 us apart under aten::gelu (100 us GELU
    kernels); the device activity buffer kept only the first `recorded` kernels."""
    events = [ProfilerStep(1 + k, ts_us=k * 3000, dur_us=3000) for k in range(3)]
    for i in range(60):
        s = (i // 20) * 3000 + (i % 20) * 140 + 10
        events += [CpuOp("aten::gelu", ts_us=s, dur_us=20), Launch(i + 1, ts_us=s + 5, dur_us=8, name="hipLaunchKernel")]
        if i < recorded:
            events.append(Kernel(i + 1, ts_us=s + 20, dur_us=100,
                                 name="void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>()"))
    return KinetoTrace(events)


# ---------------------------------------------------------------------------------------------- checks

def costly(t):
    """The findings that cost step time, in ranked order (info findings describe, they do not rank)."""
    return [f for f in t.findings if f.severity != "info" and f.scope == "steady"]


def first(t):
    found = costly(t)
    return found[0] if found else None


def ids(t) -> list[str]:
    return [f.query_id for f in t.findings]


def finding(t, query_id):
    return next((f for f in t.findings if f.query_id == query_id), None)


def named_bucket(verdict) -> str | None:
    """The idle / host bucket the verdict's sentence names (`mostly ...`): the largest steady one."""
    if "mostly" not in verdict.regime_reason:
        return None
    # on a CPU-only capture the host's own work (host.ops, host.python) is the step, not a wait
    waits = [b for b in verdict.ledger
             if not b.bucket.startswith("busy.") and b.bucket not in ("host.ops", "host.python")]
    return max(waits, key=lambda b: b.dur_ns).bucket if waits else None


def agree(tp, t, label: str):
    """The three properties every diagnosis must have (module docstring)."""
    claims_never_overlap(tp, t, label)
    assert unclaimed_buckets(tp, t) == {}, label
    # capture_validity ranks first whatever it costs (it says how to read the rest): the #1 cost is after it
    top = next((f for f in costly(t) if f.query_id != "catalog.capture_validity"), None)
    if t.verdict.regime == "unreadable":
        assert t.findings[0].query_id == "catalog.capture_validity" and t.findings[0].severity == "high", label
    elif t.verdict.regime == "device-bound":
        assert top is not None and any(b.startswith("busy.") for b in top.claimed), (label, top and top.query_id)
    elif top is not None and named_bucket(t.verdict) is not None:
        bucket = named_bucket(t.verdict)
        share = next(b.pct for b in t.verdict.ledger if b.bucket == bucket)
        if share >= 5:
            # the #1 claims what the verdict names, or a larger share of the step; or the bucket is an
            # outlier's (seen in a minority of the steady steps: it may rank below what holds in most)
            owners = [f for f in t.findings if f.claimed.get(bucket, 0) > 0]
            assert top in owners or (top.impact_pct or 0) >= share or \
                any(f.evidence and f.evidence[0].startswith("Seen in ") for f in owners), \
                (label, bucket, top.query_id, top.claimed)
    for f in t.findings:
        for text in (f.narration, f.fix, *f.evidence):
            assert not INTERNAL.search(text or ""), (label, f.query_id, text)


def diagnosed(load_trace, trace, label):
    tp = load_trace(trace)
    t = diagnose_trace(tp)
    assert t.errors == (), t.errors
    agree(tp, t, label)
    return t


# ---------------------------------------------------------------------------------------------- 1. hand-off

@pytest.mark.parametrize("wait_us,fires", [(900, True), (20, False)])
def test_a_worker_wait_on_optimizer_windows_is_claimed_by_the_workers_finding(load_trace, wait_us, fires):
    # the windows are inferred from Optimizer.step (no ProfilerStep): the hand-off from input_bound to the
    # workers detector must hold there; 4 x 900 us of the 9.81 ms the ledger holds is 36.7%
    t = diagnosed(load_trace, worker_wait_optimizer_windows(wait_us), f"worker_wait_{wait_us}")
    assert t.verdict.window_source == "dataloader" and t.verdict.steps == 4
    workers = finding(t, "catalog.dataloader_workers_missing")
    if fires:
        assert first(t) is workers and workers.impact_ns == 3_600_000 and workers.impact_pct == 36.7
        assert workers.where.steps == (1, 2, 3, 4) and workers.evidence[0].startswith("Iteration 1 waits 0.900 ms")
        assert "mostly the host waiting for the DataLoader (37% of the steady step time)" in t.verdict.regime_reason
    else:
        assert workers is None and finding(t, "catalog.input_bound") is None
        assert t.verdict.regime == "device-bound" and first(t).query_id == "catalog.device_composition"


@pytest.mark.parametrize("steps", [True, False], ids=["profiler_steps", "optimizer_windows"])
def test_with_stack_is_judged_whatever_marks_the_iterations(load_trace, steps):
    # 12 nested frames per launch (300 an iteration), 2 us each estimated: ~0.600 ms of a 1.19 ms
    # iteration. On inferred windows the rule ran nowhere before (it needed ProfilerStep)
    t = diagnosed(load_trace, stacked_launch_loop(12, steps), f"stacked_{steps}")
    stacks = finding(t, "catalog.with_stack_overhead")
    assert stacks is not None, [s.query_id for s in t.skipped]
    assert stacks.numbers["python_frame_count"] == 300 and stacks.numbers["frames_per_launch"] == 12.0
    assert stacks.numbers["estimate_dur"] == 600_000
    noun = "Step 7" if steps else "Iteration 1"
    assert stacks.evidence[0].startswith(f"{noun} was captured with Python stacks: 300 python frames (12.0 per launch)")
    assert t.verdict.regime == "host-bound"
    assert t.verdict.regime_reason.endswith("re-profile without with_stack before sizing the host-bound time")


# ---------------------------------------------------------------------------------------------- 2. every large bucket

@pytest.mark.parametrize("forward_kernel_us,launch_bound", [(8, True), (61, False)])
def test_a_starving_forward_thread_beside_a_full_backward_queue_is_launch_bound(load_trace, forward_kernel_us,
                                                                               launch_bound):
    # the backward thread's 100 queued kernels hold the step-wide median delay up; the gaps that end on a
    # forward kernel start 8 us after its launch (an empty queue): the forward thread starves the device
    t = diagnosed(load_trace, starving_forward(forward_kernel_us), f"starving_{forward_kernel_us}")
    storm = finding(t, "catalog.small_op_storm")
    if launch_bound:
        assert t.verdict.regime == "host-bound"
        assert "mostly the host issuing kernel launches (41% of the steady step time)" in t.verdict.regime_reason
        assert first(t) is storm and storm.claimed == {"idle.launch": 4_863_000} and storm.impact_pct == 40.52
        assert storm.where.steps == (11, 12, 13)
    else:
        # forward kernels as long as the ops that launch them: the device keeps up, 85% busy
        assert storm is None and t.verdict.regime == "device-bound" and t.verdict.compute_pct == 85.0


# ---------------------------------------------------------------------------------------------- 3. launch overhead

@pytest.mark.parametrize("wrapped", [True, False], ids=["compiled_region", "preprocessing"])
def test_gaps_inside_a_compiled_region_are_launch_overhead(load_trace, wrapped):
    t = diagnosed(load_trace, compiled_region(wrapped), f"compiled_{wrapped}")
    ledger = {b.bucket: b.pct for b in t.verdict.ledger}
    top = first(t)
    if wrapped:
        # 12 x 150 us between the wrapper's launches, 3 steps: 68.4% idle.launch, never host compute
        assert ledger["idle.launch"] == 68.4 and ledger.get("idle.host_compute", 0) < 10
        assert top.query_id == "catalog.small_op_storm" and top.claimed == {"idle.launch": 4_104_000}
        # the code is compiled already: the fix leads with CUDA graphs, not torch.compile's fusion
        assert top.fix.startswith("12 of the 12 launches are issued from code torch.compile already compiled")
        assert 'torch.compile(mode="reduce-overhead")' in top.fix
    else:
        # the same time in a preprocessing frame that launches nothing: host compute, 79%
        assert ledger["idle.host_compute"] == 79.0 and ledger.get("idle.launch", 0) < 5
        assert top.query_id == "catalog.host_compute_gaps" and top.claimed == {"idle.host_compute": 4_740_000}
        assert finding(t, "catalog.small_op_storm") is None


# ---------------------------------------------------------------------------------------------- 4. host/device offset

@pytest.mark.parametrize("lead_us,lagging", [(230_000, True), (20, False)])
def test_a_constant_device_lag_is_no_host_time(load_trace, lead_us, lagging):
    t = diagnosed(load_trace, lagging_device(lead_us), f"lag_{lead_us}")
    # either way the window is the device's active span: 60 kernels of 400 us back to back, 100% busy
    assert t.verdict.window_source == "capture" and t.verdict.lane_ns == 24_000_000
    assert t.verdict.regime == "device-bound" and t.verdict.compute_pct == 100.0
    assert first(t).query_id == "catalog.device_composition"
    validity = finding(t, "catalog.capture_validity")
    if lagging:
        assert validity.severity == "info" and validity.numbers["kind"] == "device_lag"
        assert validity.numbers["min_launch_delay_dur"] == 230_000_000
    else:
        assert validity is None


def test_a_device_lag_on_profiler_steps_is_not_read_as_host_bound(load_trace):
    # every kernel starts 120 ms after its launch: the 3 ProfilerSteps (0-3 ms) hold none of the device's
    # work, so the window is the device's active span, as without steps (they read host-bound, GPU 0%)
    t = diagnosed(load_trace, lagging_device(120_000, steps=True), "lag_steps")
    assert finding(t, "catalog.capture_validity").numbers["kind"] == "device_lag"
    assert t.verdict.regime != "host-bound"
    assert t.verdict.window_source == "capture" and t.verdict.lane_ns == 24_000_000
    assert t.verdict.regime == "device-bound" and t.verdict.compute_pct == 100.0
    assert first(t).query_id == "catalog.device_composition"


# ---------------------------------------------------------------------------------------------- 5. serving captures

@pytest.mark.parametrize("tokenizer", [True, False])
def test_a_serving_capture_is_read_over_the_device_span(load_trace, tokenizer):
    # 300 short tokenizer ranges on another thread are no iteration, and the 30 ms of shutdown Python after
    # the last kernel is no host compute: the window is the device's 59.95 ms
    t = diagnosed(load_trace, serving(tokenizer), f"serving_{tokenizer}")
    assert t.verdict.window_source == "capture" and t.verdict.steps == 1
    assert t.verdict.lane_ns == 59_950_000 and t.verdict.compute_pct == 83.4
    assert "idle.host_compute" not in {b.bucket for b in t.verdict.ledger}
    assert t.verdict.regime == "device-bound" and first(t).query_id == "catalog.device_composition"


# ---------------------------------------------------------------------------------------------- 6. capture validity

@pytest.mark.parametrize("launch_us,counters,kind", [(3000, True, "counter_replay"), (1000, True, "counter_replay"),
                                                     (999, True, "lost_gpu_activity"),
                                                     (3000, False, "lost_gpu_activity")])
def test_counter_replay_at_its_launch_length(load_trace, launch_us, counters, kind):
    # range-profiler counters with no kernel are replay from a median launch of 1 ms (replay_launch_dur) up;
    # 1 us under it the missing kernels read as lost activity. Either way the capture has no regime.
    t = diagnosed(load_trace, counter_replay(launch_us, counters), f"replay_{launch_us}_{counters}")
    validity = t.findings[0]
    assert validity.query_id == "catalog.capture_validity" and validity.severity == "high"
    assert validity.numbers["kind"] == kind
    assert t.verdict.regime == "unreadable"
    assert t.verdict.regime_reason.startswith("the timings of this capture cannot be read: ")
    assert [f.query_id for f in costly(t)] == ["catalog.capture_validity"]  # nothing else ranks


@pytest.mark.parametrize("recorded,severity", [(30, "high"), (50, "medium")])
def test_a_truncated_device_record_inside_the_steps_is_unreadable(load_trace, recorded, severity):
    # 30 of 60 kernels recorded: step 3 starts after the last one and has no device side at all; the ledger
    # read it as idle (host compute 47%, host-bound). 50 of 60: the tail stays inside step 3's end
    t = diagnosed(load_trace, truncated_record(recorded), f"truncated_{recorded}")
    validity = t.findings[0]
    assert validity.query_id == "catalog.capture_validity" and validity.numbers["kind"] == "truncated_device_buffer"
    assert validity.severity == severity and validity.numbers["tail_launch_count"] == 60 - recorded
    if severity == "high":
        assert t.verdict.regime == "unreadable"
        assert "Device activity stops 4.293 ms before the host does: 30 launches" in t.verdict.regime_reason
    else:
        assert t.verdict.regime != "unreadable"


# ---------------------------------------------------------------------------------------------- 7 + 14. copies

@pytest.mark.parametrize("pageable", [True, False])
def test_a_pageable_batch_copy_is_named_with_the_op_that_issues_it(load_trace, pageable):
    t = diagnosed(load_trace, pageable_batch_copy(pageable), f"copy_{pageable}")
    copy = finding(t, "catalog.blocking_copy")
    if pageable:
        assert copy.where.ops == ("aten::to",) and copy.where.steps == (40, 41, 42, 43)
        assert copy.evidence[0].startswith("Step 40: 1 blocking copies (HtoD x1; 1 pageable) from aten::to x1")
        # the device runs the copy while the host waits: 10 us of idle a step is all it costs
        assert copy.claimed == {"idle.blocking_copy": 40_000} and copy.severity == "low"
        assert finding(t, "catalog.sync_forcing_op") is None
    else:
        assert copy is None
    # the GEMM and the copies keep the device 94% busy: device-bound, composition first
    assert t.verdict.regime == "device-bound" and first(t).query_id == "catalog.device_composition"


# ---------------------------------------------------------------------------------------------- 8. with_stack

def test_a_loop_without_stacks_has_no_stack_finding_or_caveat(load_trace):
    t = diagnosed(load_trace, stacked_launch_loop(0), "stacked_twin")
    assert finding(t, "catalog.with_stack_overhead") is None
    assert "with_stack" not in t.verdict.regime_reason
    assert first(t).query_id == "catalog.small_op_storm"
    # eager launches: the rule's own fix (torch.compile first), not the compiled-code one
    assert first(t).fix.startswith("torch.compile (fusion)")


# ---------------------------------------------------------------------------------------------- 9. cold start

@pytest.mark.parametrize("kind", ["one_time", "gc", "python"])
def test_the_first_active_step_is_cold_only_with_one_time_work(load_trace, kind):
    t = diagnosed(load_trace, first_active_step(kind), f"first_{kind}")
    cold = finding(t, "catalog.cold_start")
    if kind == "one_time":
        # 4.4 ms against a median of 1.8: 2.6 ms of one-time work, most of it cudaMalloc
        assert cold.where.steps == (3,) and cold.claimed == {"cold": 2_600_000} and cold.scope == "cold"
        assert "most of it idle.alloc" in cold.evidence[0]
        assert t.verdict.cold_windows == 1 and t.verdict.steps == 3
        assert finding(t, "catalog.schedule_distortion").numbers["kind"] == "cold_first_step"
    else:
        assert cold is None and t.verdict.cold_windows == 0 and t.verdict.steps == 4
        # 2.4x the others by width alone: no cold step in the schedule either (it said "a cold step inside
        # the active window" next to a ledger that read the step as steady)
        assert finding(t, "catalog.schedule_distortion") is None
    if kind == "gc":
        # a GC pause in that step is GC, in 1 of 4 steady steps: an outlier, capped at medium
        gc = finding(t, "catalog.gc_gil_stall")
        assert gc.claimed == {"idle.gc": 2_550_000}
        assert gc.severity == "medium" and gc.evidence[0].startswith("Seen in 1 of 4 steady steps only")


# ---------------------------------------------------------------------------------------------- 10. device-bound

@pytest.mark.parametrize("kind,bucket", [("cuda_graph", "busy.gemm"), ("mtia", "busy.compute_other")])
def test_a_device_bound_graph_replay_leads_with_its_composition(load_trace, kind, bucket):
    # 4.56 ms of device work in each 5 ms step, launched by one graph launch (or one MTIA submit)
    t = diagnosed(load_trace, graph_replay(kind), f"graph_{kind}")
    assert t.verdict.regime == "device-bound" and t.verdict.compute_pct == 91.2
    top = first(t)
    assert top.query_id == "catalog.device_composition" and top.severity == "high"
    assert top.claimed == {bucket: 13_680_000}


# ---------------------------------------------------------------------------------------------- 11. CPU regimes

@pytest.mark.parametrize("kind,split,python_pct", [("overhead", "overhead-bound", 73.33), ("compute", "compute-bound", 6.67)])
def test_a_cpu_only_loop_gets_the_guides_split(load_trace, kind, split, python_pct):
    t = diagnosed(load_trace, cpu_training_loop(kind), f"cpu_{kind}")
    assert t.verdict.regime == "host-bound" and t.verdict.has_gpu is False
    assert f"{split} by the beginner's guide's split" in t.verdict.regime_reason
    other = "compute-bound" if split == "overhead-bound" else "overhead-bound"
    assert f"{other} by the beginner's guide" not in t.verdict.regime_reason
    assert {b.bucket: b.pct for b in t.verdict.ledger}["host.python"] == python_pct


# ---------------------------------------------------------------------------------------------- 12. memory churn

@pytest.mark.parametrize("changing", [True, False])
def test_cpu_allocation_churn_is_told_by_changing_sizes(load_trace, changing):
    # five large allocations a step; with `changing` four of them take a size no other step allocates
    sizes = (lambda k: [3 + k, 9 + 2 * k, 12, 20 + k, 30 + 3 * k]) if changing else (lambda k: [3, 9, 12, 20, 30])
    t = diagnosed(load_trace, cpu_allocations(sizes), f"churn_{changing}")
    churn = finding(t, "catalog.memory_churn")
    if changing:
        assert churn is not None and churn.where.steps == (50, 51, 52, 53)
        assert churn.numbers["cpu_changing_alloc_count"] == 4 and churn.numbers["cpu_alloc_count"] == 5
    else:
        assert churn is None


# ---------------------------------------------------------------------------------------------- 14. text

def test_a_default_explainer_never_speaks_for_a_bucket_another_finding_took(load_trace):
    # the workers' wait (36.7%) is claimed by dataloader_workers_missing: unexplained_time keeps only the
    # three smaller buckets (6.83%) and says so, with their fix, not the DataLoader's
    t = diagnosed(load_trace, worker_wait_optimizer_windows(900), "explainer_words")
    rest = finding(t, "catalog.unexplained_time")
    assert rest.claimed == {"idle.host_compute": 180_000, "idle.launch": 79_996, "idle.unattributed": 410_000}
    assert rest.evidence == ("3 smaller idle / wait buckets, each under 5%, hold 6.8% of the steady step time together.",)
    assert "DataLoader" not in rest.narration
    # and when the specific findings took every bucket it names, it is silent (it was an info finding
    # claiming 0 ns, saying that 40.5% idle.launch was unexplained next to the finding that explained it)
    storm = diagnosed(load_trace, starving_forward(8), "explainer_silent")
    assert finding(storm, "catalog.unexplained_time") is None and "catalog.unexplained_time" in storm.silent


def test_inferred_windows_print_their_own_index(load_trace):
    t = diagnosed(load_trace, worker_wait_optimizer_windows(900), "window_index")
    rows = finding(t, "catalog.dataloader_workers_missing").evidence
    assert [r.split(" waits")[0] for r in rows] == ["Iteration 1", "Iteration 2", "Iteration 3"]


# ---------------------------------------------------------------------------------------------- 7. double counting

@pytest.mark.parametrize("foreach", [False, True], ids=["per_parameter", "foreach"])
def test_optimizer_ops_are_counted_once(load_trace, foreach):
    t = diagnosed(load_trace, optimizer_loop(foreach), f"optimizer_{foreach}")
    optimizer, storm = finding(t, "catalog.optimizer_step_dominance"), finding(t, "catalog.small_op_storm")
    if not foreach:
        # 600 ops under 50 us in a 4.22 ms optimizer step: the optimizer's finding claims its launch gaps and
        # its kernels; small_op_storm, which sees the same 600 launches, keeps only what is left of idle.launch
        assert first(t) is optimizer and optimizer.impact_pct == 64.92
        assert optimizer.claimed == {"busy.elementwise": 3_600_000, "idle.launch": 9_060_000}
        assert optimizer.where.ops == ("aten::add_", "aten::addcdiv_", "aten::mul_", "aten::sqrt")
        assert storm.claimed == {"idle.launch": 243_000}
        idle_launch = next(b.dur_ns for b in t.verdict.ledger if b.bucket == "idle.launch")
        assert optimizer.claimed["idle.launch"] + storm.claimed["idle.launch"] == idle_launch == 9_303_000
    else:
        assert optimizer is None and storm is None


# ---------------------------------------------------------------------------------------------- 13. straggler

@pytest.mark.parametrize("slow_us,shapes_differ,straggler,why", [
    (4000, False, 2, "the machine"), (4000, True, 2, "data imbalance"), (0, False, None, None)])
def test_a_three_rank_straggler_leads_and_the_waits_point_at_it(tmp_path, slow_us, shapes_differ, straggler, why):
    for rank in range(3):
        nccl_rank(rank, slow_us, shapes_differ).write(tmp_path, f"rank{rank}.json.gz")
    d = diagnose_directory(tmp_path)
    assert d.ranks_summary["straggler"] == straggler
    exposed = {t.rank: finding(t, "catalog.exposed_communication") for t in d.traces}
    if straggler is None:
        assert not d.names_straggler and all(f is None or f.cross_rank_note is None for f in exposed.values())
        return
    narration = d.ranks_summary["narration"]
    # 4 ms more GPU compute a step than the other two (9 ms against 5 ms)
    assert narration.startswith("Rank 2 is the straggler")
    assert why in narration
    assert render_text(d).startswith("across ranks (first: the straggler every other rank waits for): Rank 2 is")
    for rank in (0, 1):
        # the waiting ranks' own #1 is their exposed all-reduce (38.33% of the step), pointing at rank 2
        assert first(d.traces[rank]) is exposed[rank] and exposed[rank].impact_pct == 38.33
        assert exposed[rank].cross_rank_note.startswith("The cross-rank reading names rank 2 the straggler")
    assert exposed[2] is None or exposed[2].cross_rank_note is None


def test_the_idle_time_between_requests_is_not_step_time(load_trace):
    # a `## request ##` window is the request's own 6 ms (it ran to the next request's start, 14 ms: the
    # server's 8 ms wait, nothing recorded, was 51.6% of the step as idle.unattributed, host-bound)
    t = diagnosed(load_trace, request_loop(), "requests")
    assert t.verdict.window_source == "record_function" and t.verdict.steps == 5
    assert t.verdict.median_step_ns == 6_000_000 and t.verdict.total_step_ns == 30_000_000
    assert "idle.unattributed" not in {b.bucket for b in t.verdict.ledger if b.pct >= 5}
    # inside a request the device computes 80% (40 GEMMs of 120 us every 150 us)
    assert t.verdict.regime == "device-bound" and t.verdict.compute_pct == 80.0


def test_an_attention_bound_step_names_attention_first(load_trace):
    t = diagnosed(load_trace, attention_steps(), "attention")
    assert t.verdict.regime == "device-bound" and t.verdict.compute_pct == 90.0
    top = first(t)
    assert top.query_id == "catalog.device_composition"
    assert top.claimed == {"busy.attention": 7_920_000, "busy.gemm": 2_880_000}
    assert "attention 66.0%" in top.evidence[0] and "the largest kernel class is attention" in top.evidence[0]


@pytest.mark.parametrize("every_step", [True, False])
def test_device_allocations_in_every_step_are_churn(load_trace, every_step):
    t = diagnosed(load_trace, device_allocations(every_step), f"malloc_{every_step}")
    churn = finding(t, "catalog.memory_churn")
    if every_step:
        # 300 us of cudaMalloc with the device idle in each 3 ms step: 10%, high, in every steady step
        assert churn.claimed == {"idle.alloc": 1_200_000} and churn.severity == "high"
        assert churn.where.steps == (70, 71, 72, 73)
        assert "mostly device memory allocation and frees (10% of the steady step time)" in t.verdict.regime_reason
    else:
        # once, in the first step (not wide enough to be cold): an outlier, low
        assert churn.claimed == {"idle.alloc": 300_000} and churn.severity == "low"
        assert churn.evidence[0].startswith("Seen in 1 of 4 steady steps only")


@pytest.mark.parametrize("graph_break", [True, False])
def test_a_graph_break_is_found_on_inferred_iterations(load_trace, graph_break):
    # no ProfilerStep: the rule ran nowhere before (it needed steps); now per request window
    t = diagnosed(load_trace, compiled_requests(graph_break), f"compiled_requests_{graph_break}")
    assert t.verdict.window_source == "record_function" and t.verdict.steps == 4
    assert "catalog.compile_graph_breaks" not in [s.query_id for s in t.skipped]
    breaks = finding(t, "catalog.compile_graph_breaks")
    if graph_break:
        assert breaks.where.steps == (1, 2, 3, 4) and breaks.numbers["break_count"] == 1
        assert breaks.numbers["eager_op_count"] == 2 and breaks.numbers["eager_dur"] == 300_000
        assert breaks.evidence[0].startswith("Iteration 1: 1 graph breaks in 1 compiled calls")
    else:
        assert breaks is None


def test_an_unoverlapped_all_reduce_is_found_without_a_schedule(load_trace):
    # iterations inferred from Optimizer.step: the backward windows come from them (they were cut per
    # ProfilerStep only, so the rule was not applicable). The rule is deprecated (diagnose runs its
    # successor, exposed_communication, which claims the same 0.9 ms), so it is run as `kineto-sql run` does
    tp = load_trace(gloo_loop_without_schedule())
    t = diagnose_trace(tp)
    assert t.errors == () and t.verdict.window_source == "optimizer_step"
    agree(tp, t, "gloo_no_schedule")
    exposed = finding(t, "catalog.exposed_communication")
    assert first(t) is exposed and exposed.claimed == {"host.comm_wait": 2_700_000}
    allreduce = run_query(tp, "catalog.unoverlapped_allreduce", {})
    assert allreduce.not_applicable is None
    rows = allreduce.df
    assert rows["step"].tolist() == [1, 2, 3] and rows["overlap_pct"].tolist() == [0.0] * 3
    assert rows["after_backward_pct"].tolist() == [100.0] * 3 and rows["impact_dur"].tolist() == [900_000] * 3
    assert rows["evidence"][0].startswith("Iteration 1: 1 collective ops (0.900 ms) overlap backward compute only 0.0%")
