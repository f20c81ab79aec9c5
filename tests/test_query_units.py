"""Exact rows of every lib module and of the reading queries on tiny hand-built traces."""
from __future__ import annotations

import pytest

from kineto_sql.catalog.spec import get
from kineto_sql.errors import QueryError
from kineto_sql.run.runner import run_query
from kineto_sql.sql.includes import kineto_dependencies, module_path
from kineto_sql.sql.literals import include_statement
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, MemoryEvent, ProfilerStep, PythonFrame
from tests.query_support import load_trace  # noqa: F401  (fixture)

US = 1_000


def standard_trace() -> KinetoTrace:
    """Two steps; aten::mm launches a kernel, aten::add an async memcpy; an NCCL kernel with no launch;
    a [memory] instant and a cudaMalloc under the ops; a python frame around step 1's ops."""
    return KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000, gpu_copy=True),
        PythonFrame("train.py(10): step", ts_us=5, dur_us=900),
        CpuOp("aten::mm", ts_us=10, dur_us=100, external_id=7),
        MemoryEvent(ts_us=15, bytes=1024, total_allocated=1024, total_reserved=2048),
        Launch(correlation=1, ts_us=20, dur_us=10),
        Kernel(correlation=1, ts_us=50, dur_us=30, name="volta_sgemm_128x64_nn"),
        Kernel(correlation=3, ts_us=60, dur_us=10, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL", stream=9),
        CpuOp("aten::add", ts_us=200, dur_us=50),
        Launch(correlation=2, ts_us=210, dur_us=10, name="cudaMemcpyAsync"),
        Kernel(correlation=2, ts_us=240, dur_us=20, name="Memcpy HtoD (Pageable -> Device)", cat="gpu_memcpy",
               stream=8),
        CpuOp("aten::empty", ts_us=300, dur_us=50),
        Launch(correlation=4, ts_us=310, dur_us=30, name="cudaMalloc"),
        ProfilerStep(2, ts_us=1000, dur_us=500),
        CpuOp("aten::mul", ts_us=1100, dur_us=20),
    ])


def rows(tp, include: str, sql: str) -> list[tuple]:
    tp.query(include)
    return [tuple(None if v != v else v for v in r) for r in tp.df(sql).itertuples(index=False)]


def test_steps_are_cpu_side_only(load_trace):
    tp = load_trace(standard_trace())
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.steps", "SELECT step, ts, dur FROM kineto_steps")
    assert got == [(1, 0, 1000 * US), (2, 1000 * US, 500 * US)]


def test_cpu_ops_self_time_step_and_annotation_flag(load_trace):
    tp = load_trace(standard_trace())
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.cpu_ops",
               "SELECT name, self_dur, step, is_annotation FROM kineto_cpu_ops ORDER BY ts")
    assert got == [
        ("ProfilerStep#1", 100 * US, 1, 1),   # 1000 - the 900 us python frame
        ("aten::mm", 90 * US, 1, 0),          # 100 - the 10 us launch (the [memory] instant takes nothing)
        ("aten::add", 40 * US, 1, 0),
        ("aten::empty", 20 * US, 1, 0),
        ("ProfilerStep#2", 480 * US, 2, 1),
        ("aten::mul", 20 * US, 2, 0),
    ]


def test_kernels_kind_class_device_stream(load_trace):
    tp = load_trace(standard_trace())
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.kernels",
               "SELECT name, kind, class, device, stream, correlation FROM kineto_kernels ORDER BY ts")
    assert got == [
        ("volta_sgemm_128x64_nn", "kernel", "compute", 0, 7, 1),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", "communication", 0, 9, 3),
        ("Memcpy HtoD (Pageable -> Device)", "memcpy", "memory", 0, 8, 2),
    ]


@pytest.mark.parametrize(("name", "expected"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float", "communication"),
    ("ncclDevKernel_Generic_4", "communication"),
    ("ncclAllReduceRingLLKernel_sum_f32", "communication"),
    ("rcclGenericKernel", "communication"),
    ("void ncclx::kernel<float>()", "communication"),
    ("__amd_rocclr_copyBuffer", "memory"),
    ("__amd_rocclr_fillBufferAligned", "memory"),
    ("triton_poi_fused_add_0", "compute"),
    ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", "compute"),
])
def test_kernel_class_name_rules(load_trace, name, expected):
    tp = load_trace(KinetoTrace([Kernel(correlation=1, ts_us=0, dur_us=5, name=name)]))
    assert rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.kernels", "SELECT class FROM kineto_kernels") == [(expected,)]


# Real kernel names (from the public corpus and the libraries' sources) and the class an expert gives them.
KERNEL_CLASS_CASES = [
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "kernel", "communication"),
    ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)",
     "kernel", "communication"),
    ("volta_sgemm_128x64_nn", "kernel", "gemm"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2>(cutlass_80_t::Params)",
     "kernel", "gemm"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel",
     "kernel", "gemm"),
    ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "kernel", "gemm"),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1", "kernel", "gemm"),
    ("void gemv2N_kernel<int, int, float, float, float, float, 128, 1, 4, 4, 1, false>(cublasGemvParams<float>)",
     "kernel", "gemm"),
    ("triton_tem_fused_addmm_0", "kernel", "gemm"),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", "kernel", "gemm"),
    ("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, float const*)", "kernel", "conv"),
    ("void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, true>(int, int)", "kernel", "conv"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", "kernel", "conv"),
    ("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_wt32x32x8", "kernel", "conv"),
    ("triton_poi_fused_convolution_relu_0", "kernel", "elementwise"),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4> >(Params)",
     "kernel", "attention"),
    ("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext", "kernel", "attention"),
    ("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16>(__hip_bfloat16*)", "kernel", "attention"),
    ("attn_fwd", "kernel", "attention"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
     "kernel", "softmax"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)", "kernel", "reduction"),
    ("triton_per_fused__softmax_3", "kernel", "softmax"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float)",
     "kernel", "norm"),
    ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float)", "kernel", "norm"),
    ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
     "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*)", "kernel", "norm"),
    ("triton_red_fused_add_mean_mul_pow_rsqrt_0", "kernel", "norm"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >"
     "(at::native::ReduceOp<float>)", "kernel", "reduction"),
    ("triton_red_fused_sum_1", "kernel", "reduction"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
     "kernel", "elementwise"),
    ("triton_poi_fused_add_cos_sin_0", "kernel", "elementwise"),
    ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>(long, int)",
     "kernel", "elementwise"),
    ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
     "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}> >(int, at::native::X)",
     "kernel", "copy_kernel"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*, int)",
     "kernel", "copy_kernel"),
    ("batched_transpose_32x32_half", "kernel", "copy_kernel"),
    # fbgemm's namespace in the parameter list (`fbgemm_gpu::FixedDivisor`) must not make this a gemm
    ("void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<float, float>"
     "(at::PhiloxCudaState, fbgemm_gpu::FixedDivisor, float)", "kernel", "embedding"),
    ("void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int, int)", "kernel", "copy_kernel"),
    ("void tensorrt_llm::kernels::quantize_with_block_size<2, __nv_bfloat16, 32, true>"
     "(int, flashinfer::QuantizationSFLayout)", "kernel", "other"),
    ("void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800>(int*)",
     "kernel", "other"),
    ("__amd_rocclr_copyBuffer", "kernel", "memcpy_other"),
    ("__amd_rocclr_fillBufferAligned", "kernel", "memset"),
    ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", "memcpy_htod"),
    ("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", "memcpy_dtoh"),
    ("Memcpy DtoD (Device -> Device)", "gpu_memcpy", "memcpy_dtod"),
    ("Memcpy PtoP (Device -> Device)", "gpu_memcpy", "memcpy_other"),
    ("Memset (Device)", "gpu_memset", "memset"),
]


def test_kernel_classes_fine_rules(load_trace):
    trace = KinetoTrace([Kernel(correlation=i + 1, ts_us=10 * i, dur_us=5, name=name, cat=cat)
                         for i, (name, cat, _) in enumerate(KERNEL_CLASS_CASES)])
    # the same name twice gets the same class (classes are matched per distinct name)
    trace.add(Kernel(correlation=999, ts_us=10_000, dur_us=7, name="volta_sgemm_128x64_nn", stream=9))
    tp = load_trace(trace)
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.kernel_classes",
               "SELECT c.class, k.name, c.dur, c.stream FROM kineto_kernel_classes AS c "
               "JOIN kineto_kernels AS k USING (id) ORDER BY c.ts")
    assert [(cls, name) for cls, name, _, _ in got] == [(cls, name) for name, _, cls in KERNEL_CLASS_CASES] + [
        ("gemm", "volta_sgemm_128x64_nn")]
    assert got[-1][2:] == (7 * US, 9)
    assert tp.df("SELECT count(*) AS n FROM kineto_kernel_classes").n[0] == len(KERNEL_CLASS_CASES) + 1


def test_launches_link_by_correlation_to_kernel_and_op(load_trace):
    tp = load_trace(standard_trace())
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.launches",
               "SELECT name, correlation, op_name, step, gpu_count, gpu_dur, launch_delay_dur, flow_confirmed "
               "FROM kineto_launches ORDER BY ts")
    assert got == [
        ("cudaLaunchKernel", 1, "aten::mm", 1, 1, 30 * US, 30 * US, 1),
        ("cudaMemcpyAsync", 2, "aten::add", 1, 1, 20 * US, 30 * US, 1),
    ]


def test_launch_without_flow_is_still_linked_but_not_confirmed(load_trace):
    trace = KinetoTrace([CpuOp("aten::relu", 0, 50), Launch(5, 10, 5, flow=False), Kernel(5, 30, 5)])
    got = rows(load_trace(trace), "INCLUDE PERFETTO MODULE kineto.lib.launches",
               "SELECT op_name, gpu_count, flow_confirmed FROM kineto_launches")
    assert got == [("aten::relu", 1, 0)]


def test_graph_launch_counts_every_kernel(load_trace):
    trace = KinetoTrace([Launch(9, 0, 20, name="cudaGraphLaunch"),
                         *[Kernel(9, 30 + 10 * i, 5, name=f"k{i}") for i in range(4)]])
    got = rows(load_trace(trace), "INCLUDE PERFETTO MODULE kineto.lib.launches",
               "SELECT name, gpu_count, gpu_ts, gpu_end_ts, gpu_dur FROM kineto_launches")
    assert got == [("cudaGraphLaunch", 4, 30 * US, 65 * US, 20 * US)]


def test_stream_busy_device_busy_and_idle(load_trace):
    tp = load_trace(standard_trace())
    tp.query("INCLUDE PERFETTO MODULE kineto.lib.gpu_idle")
    assert rows(tp, "SELECT 1", "SELECT device, stream, ts, dur, activity_count FROM kineto_stream_busy") == [
        (0, 7, 50 * US, 30 * US, 1), (0, 8, 240 * US, 20 * US, 1), (0, 9, 60 * US, 10 * US, 1)]
    assert rows(tp, "SELECT 1", "SELECT device, ts, dur, interval_count FROM kineto_device_busy") == [
        (0, 50 * US, 30 * US, 2), (0, 240 * US, 20 * US, 1)]
    assert rows(tp, "SELECT 1", "SELECT device, stream, ts, dur FROM kineto_gpu_idle") == [
        (0, None, 80 * US, 160 * US)]


def test_stream_busy_merges_overlapping_and_touching_kernels(load_trace):
    trace = KinetoTrace([Kernel(1, 0, 10), Kernel(2, 10, 10), Kernel(3, 15, 20), Kernel(4, 50, 5)])
    got = rows(load_trace(trace), "INCLUDE PERFETTO MODULE kineto.lib.stream_busy",
               "SELECT ts, dur, activity_count FROM kineto_stream_busy")
    assert got == [(0, 35 * US, 3), (50 * US, 5 * US, 1)]


def _merge_trace() -> KinetoTrace:
    """Device 0 stream 7: 0-100 with 20-30 and 40-50 nested in it (the second starts after the first nested
    one ended: only a running max of earlier ends keeps it in), 100-150 touching, 200-210 twice
    (identical), 300-305 disjoint. Stream 8 (50-60) and device 1 (0-10) overlap it in time only."""
    return KinetoTrace([Kernel(1, 0, 100), Kernel(2, 20, 10), Kernel(3, 40, 10), Kernel(4, 100, 50),
                        Kernel(5, 200, 10), Kernel(6, 200, 10), Kernel(7, 300, 5),
                        Kernel(8, 50, 10, stream=8), Kernel(9, 0, 10, device=1)])


def test_interval_merge_nested_touching_identical_disjoint_per_partition(load_trace):
    tp = load_trace(_merge_trace())
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.kernels; INCLUDE PERFETTO MODULE kineto.lib.interval_merge",
               "SELECT device, stream, ts, dur, interval_count FROM kineto_interval_merge!("
               "(SELECT device, stream, ts, dur FROM kineto_kernels), (device, stream)) ORDER BY device, stream, ts")
    assert got == [(0, 7, 0, 150 * US, 4), (0, 7, 200 * US, 10 * US, 2), (0, 7, 300 * US, 5 * US, 1),
                   (0, 8, 50 * US, 10 * US, 1), (1, 7, 0, 10 * US, 1)]
    one = rows(tp, "SELECT 1",
               "SELECT k, ts, dur, interval_count FROM kineto_interval_merge!("
               "(SELECT 0 AS k, ts, dur FROM kineto_kernels), (k)) ORDER BY ts")
    assert one == [(0, 0, 150 * US, 6), (0, 200 * US, 10 * US, 2), (0, 300 * US, 5 * US, 1)]
    # stream_busy / device_busy are this merge: the same intervals, busy time to the ns
    assert rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.device_busy",
                "SELECT device, stream, ts, dur, activity_count FROM kineto_stream_busy") == got
    assert rows(tp, "SELECT 1", "SELECT sum(dur) FROM kineto_device_busy WHERE device = 0") == [(165 * US,)]


_MERGE_EDGES = ("(SELECT column1 AS p, column2 AS ts, column3 AS dur FROM (VALUES "
                "(1, 0, 10), (1, 10, 0), (1, 10, 5), (1, 20, 0), (1, 20, 3), (1, 30, -1), (1, 40, -1), (1, 40, 2), "
                "(2, 5, 5), (NULL, 0, 1), (NULL, 1, 1)))")


def test_interval_merge_edges_match_the_per_row_groups(load_trace):
    """Zero-length intervals touching and inside others, two starting together, Perfetto's unfinished dur -1
    (its end is before its start: it never covers the next start), a one-row partition, a NULL partition.
    The merge's rows equal the merged groups that _kineto_interval_merge_rows numbers row by row."""
    tp = load_trace(_merge_trace())
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.interval_merge",
               f"SELECT p, ts, dur, interval_count FROM kineto_interval_merge!({_MERGE_EDGES}, (p)) ORDER BY p, ts, dur")
    assert got == [(None, 0, 2, 2), (1, 0, 15, 3), (1, 20, 3, 2), (1, 30, -1, 1), (1, 40, -1, 1), (1, 40, 2, 1),
                   (2, 5, 5, 1)]
    by_rows = rows(tp, "SELECT 1",
                   "SELECT p, min(ts), max(_merge_end_ts) - min(ts), count(*) FROM "
                   f"_kineto_interval_merge_rows!({_MERGE_EDGES}, (p)) GROUP BY p, merge_group ORDER BY 1, 2, 3")
    assert by_rows == got


def _collectives(load_trace, events) -> list[tuple]:
    return rows(load_trace(KinetoTrace([ProfilerStep(1, ts_us=0, dur_us=1000)] + events)),
                "INCLUDE PERFETTO MODULE kineto.lib.collectives",
                "SELECT name, ts, dur, source, device, step FROM kineto_collectives ORDER BY ts")


def test_collectives_host_work_items(load_trace):
    """Without communication kernels or gloo ops: the synchronous backend's collective ops whose direct parent
    is no collective op (record_param_comms inside c10d::allreduce_ is the same call; nccl:all_reduce under
    aten::foo or a python frame is a call of its own)."""
    sync = [CpuOp("c10d::allreduce_", ts_us=10, dur_us=100), CpuOp("record_param_comms", ts_us=20, dur_us=50),
            CpuOp("aten::foo", ts_us=200, dur_us=100), CpuOp("nccl:all_reduce", ts_us=210, dur_us=30),
            PythonFrame("train.py(3): sync", ts_us=400, dur_us=100), CpuOp("record_param_comms", ts_us=410, dur_us=20),
            CpuOp("c10d::barrier", ts_us=600, dur_us=10)]             # no trailing underscore: not a work item
    assert _collectives(load_trace, sync) == [("c10d::allreduce_", 10 * US, 100 * US, "cpu", None, 1),
                                              ("nccl:all_reduce", 210 * US, 30 * US, "cpu", None, 1),
                                              ("record_param_comms", 410 * US, 20 * US, "cpu", None, 1)]
    # gloo's ops, when there are any, are the work items instead
    gloo = sync + [CpuOp("gloo:all_reduce", ts_us=50, dur_us=400, tid=2, cat="user_annotation")]
    assert _collectives(load_trace, gloo) == [("gloo:all_reduce", 50 * US, 400 * US, "cpu", None, 1)]
    # communication kernels, when there are any, are the only pieces (their step is the launch's)
    gpu = gloo + [Launch(correlation=1, ts_us=30, dur_us=5),
                  Kernel(correlation=1, ts_us=100, dur_us=30, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL")]
    assert _collectives(load_trace, gpu) == [("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100 * US, 30 * US, "kernel",
                                              0, 1)]


def test_memory_instants_and_malloc_calls(load_trace):
    tp = load_trace(standard_trace())
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.memory",
               "SELECT source, kind, name, bytes, total_allocated, total_reserved, device, step, "
               "(SELECT p.name FROM slice p WHERE p.id = m.parent_id) FROM kineto_memory m ORDER BY m.ts")
    assert got == [
        ("allocator", "alloc", "[memory]", 1024, 1024, 2048, 0, 1, "aten::mm"),
        ("runtime", "alloc", "cudaMalloc", None, None, None, None, 1, "aten::empty"),
    ]


def test_python_frames_from_slices(load_trace):
    tp = load_trace(standard_trace())
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.python_frames",
               "SELECT f.distance, f.frame, f.source FROM slice s JOIN kineto_python_frames(s.id) f "
               "WHERE s.name = 'aten::mm'")
    assert got == [(1, "train.py(10): step", "python_function")]


def test_python_frames_from_call_stack_arg(load_trace):
    trace = KinetoTrace([CpuOp("aten::conv2d", 0, 10, cat="Operator",
                               args={"Call stack": "conv.py(440): _conv_forward;model.py(12): forward;main.py(3): <module>"})])
    got = rows(load_trace(trace), "INCLUDE PERFETTO MODULE kineto.lib.python_frames",
               "SELECT f.distance, f.frame, f.source FROM slice s JOIN kineto_python_frames(s.id) f")
    assert got == [(1, "conv.py(440): _conv_forward", "call_stack"), (2, "model.py(12): forward", "call_stack"),
                   (3, "main.py(3): <module>", "call_stack")]


def test_capabilities(load_trace):
    tp = load_trace(standard_trace())
    got = dict(rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.capabilities",
                    "SELECT name, present FROM kineto_capabilities"))
    assert got == {"steps": 1, "cpu_ops": 1, "gpu": 1, "stacks": 1, "memory": 1, "shapes": 0, "flops": 0, "flows": 1,
                   "distributed": 0, "compile": 0}


def test_info_seen_reads_capabilities():
    """`info`'s seen section (and diff, which reads capabilities) takes every profiler option from
    kineto_capabilities and never counts events of its own."""
    from kineto_sql.sql.files import sections

    seen_sql = sections("trace_info.sql")["seen"]
    assert "kineto_capabilities" in seen_sql and "FROM slice" not in seen_sql and "FROM args" not in seen_sql


def test_capabilities_found_counts(load_trace):
    """record_shapes (`Input Dims`, counted once per op) and with_flops (`flops` args) are capabilities with
    their counts, and `info` reports those counts."""
    from kineto_sql.trace_info import describe

    trace = KinetoTrace([CpuOp("aten::mm", 0, 10, args={"Input Dims": [[2, 2], [2, 2]], "flops": 16}),
                         CpuOp("aten::add", 20, 10, args={"Input Dims": [[2, 2], [2, 2]]}),
                         CpuOp("aten::relu", 40, 10),
                         PythonFrame("model.py(3): forward", 0, 60),
                         MemoryEvent(ts_us=1, bytes=64, total_allocated=64, total_reserved=2**20)])
    tp = load_trace(trace)
    got = {n: (p, f) for n, p, f in rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.capabilities",
                                          "SELECT name, present, found FROM kineto_capabilities")}
    assert (got["shapes"], got["flops"], got["stacks"], got["memory"]) == ((1, 2), (1, 1), (1, 1), (1, 1))
    assert describe(tp).seen == {"record_shapes": 2, "with_stack": 1, "profile_memory": 1, "with_flops": 1}
    bare = load_trace(KinetoTrace([CpuOp("aten::mm", 0, 10)]))
    assert rows(bare, "INCLUDE PERFETTO MODULE kineto.lib.capabilities",
                "SELECT present, found FROM kineto_capabilities WHERE name IN ('shapes', 'flops')") == [(0, 0), (0, 0)]


def test_capabilities_distributed_and_compile(load_trace):
    trace = KinetoTrace([CpuOp("Torch-Compiled Region: 0/0", 0, 10, cat="user_annotation")],
                        metadata={"distributedInfo": {"rank": 3, "world_size": 8, "backend": "nccl"}})
    got = dict(rows(load_trace(trace), "INCLUDE PERFETTO MODULE kineto.lib.capabilities",
                    "SELECT name, present FROM kineto_capabilities WHERE present"))
    assert got == {"cpu_ops": 1, "distributed": 1, "compile": 1}


def test_host_tree_follows_torch_when_an_annotation_overlaps_a_frame(load_trace):
    """Optimizer.step#... opens inside record_function's __enter__ frame and outlives it: torch pops the
    frame, so the annotation's parent is the outer frame and the later frame is its child."""
    trace = KinetoTrace([
        PythonFrame("loop.py(1): run", 0, 300),
        PythonFrame("profiler.py(918): __enter__", 10, 100),
        CpuOp("Optimizer.step#SGD.step", 50, 150, cat="user_annotation"),
        PythonFrame("sgd.py(20): step", 150, 40),
    ])
    tp = load_trace(trace)
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.host_tree",
               "SELECT s.name, h.self_dur, (SELECT name FROM slice WHERE id = h.parent_id) "
               "FROM kineto_host_tree h JOIN slice s USING (id) ORDER BY h.ts")
    assert got == [
        ("loop.py(1): run", 50 * US, None),
        ("profiler.py(918): __enter__", 100 * US, "loop.py(1): run"),
        ("Optimizer.step#SGD.step", 110 * US, "loop.py(1): run"),
        ("sgd.py(20): step", 40 * US, "Optimizer.step#SGD.step"),
    ]
    assert tp.report.fix_count("overlap_lane") == 1


def test_host_tree_takes_a_lane_container_only_where_torch_does(load_trace):
    """An annotation that outlives the frame it opens in goes to an overlap lane and contains the ops after
    it: the outermost op (its Perfetto parent, the frame, starts before the annotation) gets the annotation
    as its parent, as torch's tree has it; the ops nested in that op keep it (it starts later)."""
    trace = KinetoTrace([
        PythonFrame("train.py(1): main", 0, 1000),
        CpuOp("forward", 50, 1050, cat="user_annotation"),
        CpuOp("aten::linear", 100, 800),
        CpuOp("aten::mm", 200, 100),
        CpuOp("aten::add", 400, 100),
    ])
    tp = load_trace(trace)
    got = rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.host_tree",
               "SELECT s.name, h.self_dur, (SELECT name FROM slice WHERE id = h.parent_id), h.child_count "
               "FROM kineto_host_tree h JOIN slice s USING (id) ORDER BY h.ts")
    assert got == [
        ("train.py(1): main", 1000 * US, None, 0),
        ("forward", 250 * US, None, 1),
        ("aten::linear", 600 * US, "forward", 2),
        ("aten::mm", 100 * US, "aten::linear", 0),
        ("aten::add", 100 * US, "aten::linear", 0),
    ]
    assert tp.report.fix_count("overlap_lane") == 1


def test_step_table_rows(load_trace):
    run = run_query(load_trace(standard_trace()), "reading.step_table")
    got = [tuple(r) for r in run.df[["step", "dur", "device", "cpu_busy_dur", "gpu_busy_dur", "gpu_occupancy_pct",
                                      "verdict", "cold_start"]].itertuples(index=False)]
    assert got == [(1, 1000 * US, 0, 200 * US, 50 * US, 5.0, "sparse", 1),
                   (2, 500 * US, 0, 20 * US, 0, 0.0, "sparse", 0)]
    assert run.id_version == "reading.step_table@5"


def test_step_table_params_change_verdict_and_cold_start(load_trace):
    run = run_query(load_trace(standard_trace()), "reading.step_table",
                    {"sparse_below_pct": "4", "cold_start_factor": 2.5})
    assert run.df[["verdict", "cold_start"]].values.tolist() == [["busy", 0], ["sparse", 0]]
    assert run.params == {"sparse_below_pct": 4.0, "cold_start_factor": 2.5}


def test_step_table_without_device_activity(load_trace):
    trace = KinetoTrace([ProfilerStep(1, 0, 100), CpuOp("aten::add", 10, 10)])
    run = run_query(load_trace(trace), "reading.step_table")
    assert run.df[["device", "cpu_busy_pct", "verdict"]].values.tolist() == [[None, 10.0, "no device activity"]]


def test_step_table_without_steps_reads_the_ledger_window(load_trace):
    """No ProfilerStep: the step table is the ledger's window (here the whole capture), not a refusal."""
    run = run_query(load_trace(KinetoTrace([CpuOp("aten::add", 0, 10)])), "reading.step_table")
    assert run.not_applicable is None
    assert run.df[["dur", "device", "cpu_busy_dur", "verdict"]].values.tolist() == [
        [10 * US, None, 10 * US, "no device activity"]]


def test_op_table_rows(load_trace):
    run = run_query(load_trace(standard_trace()), "reading.op_table")
    got = [tuple(r) for r in run.df[["name", "kind", "calls", "self_cpu_dur", "cpu_dur", "self_device_dur",
                                      "device_dur"]].itertuples(index=False)]
    assert got[:4] == [
        ("aten::mm", "op", 1, 90 * US, 100 * US, 30 * US, 30 * US),
        ("aten::add", "op", 1, 40 * US, 50 * US, 20 * US, 20 * US),
        ("train.py(10): step", "python", 1, 700 * US, 900 * US, 0, 50 * US),
        ("ProfilerStep*", "annotation", 2, 580 * US, 1500 * US, 0, 50 * US),
    ]
    assert run.df.set_index("name").loc["aten::mm", "self_device_pct"] == pytest.approx(50.0)


def test_op_table_top_n(load_trace):
    run = run_query(load_trace(standard_trace()), "reading.op_table", {"top_n": 2})
    assert run.df["name"].tolist() == ["aten::mm", "aten::add"]


def test_op_table_folds_same_name_only_child_like_torch(load_trace):
    trace = KinetoTrace([CpuOp("aten::div_", 0, 100), CpuOp("aten::div_", 10, 50), CpuOp("aten::empty", 20, 5)])
    run = run_query(load_trace(trace), "reading.op_table")
    assert run.df[["name", "calls", "self_cpu_dur", "cpu_dur"]].values.tolist() == [
        ["aten::div_", 1, 95 * US, 100 * US], ["aten::empty", 1, 5 * US, 5 * US]]


def test_unknown_parameter_and_bad_value_are_query_errors(load_trace):
    tp = load_trace(standard_trace())
    with pytest.raises(QueryError, match="has no parameter 'nope'"):
        run_query(tp, "reading.op_table", {"nope": 1})
    with pytest.raises(QueryError, match="wants a LONG value"):
        run_query(tp, "reading.op_table", {"top_n": "ten"})


def test_params_become_literals_not_sql(load_trace):
    """A hostile string parameter is a literal: it cannot close the call and add a statement."""
    from kineto_sql.run.runner import entrypoint_call
    spec = get("reading.op_table")
    with pytest.raises(QueryError):
        spec.param("top_n").coerce("1); DROP TABLE slice; --")
    assert entrypoint_call(spec, {"top_n": 5}) == "SELECT * FROM kineto_reading_op_table(5)"


def _three_iterations(*per_iteration) -> KinetoTrace:
    """Three 1000 us iterations of the events `per_iteration` makes from an iteration start (us)."""
    t = KinetoTrace()
    for i in range(3):
        t.add(*(e for make in per_iteration for e in make(i * 1000)))
    return t


def _windows(tp) -> list[tuple]:
    return rows(tp, "INCLUDE PERFETTO MODULE kineto.lib.iterations",
                "SELECT step, source, marker, ts / 1000, dur / 1000, is_cold FROM kineto_iterations ORDER BY ts")


def test_iterations_grow_no_engine_heap(load_trace):
    """lib.iterations is a chain of Perfetto tables, not one statement: SQLite sizes each Bloom filter of a
    join from its row estimate, and a subquery's estimate is far above a table's exact row count. As one
    statement (v11) its dozen filters grew the engine's wasm heap by 55.5 MB on this two-step trace, and a
    wasm heap never shrinks; as tables, by nothing."""
    tp = load_trace(standard_trace())
    for module in kineto_dependencies(module_path("kineto.lib.iterations").read_text()):
        tp.query(include_statement(module))
    before = tp.heap_bytes
    assert before is not None  # the embedded engine reports its heap
    assert _windows(tp) == [(1, "profiler_step", "ProfilerStep#1", 0, 1000, 0),
                            (2, "profiler_step", "ProfilerStep#2", 1000, 500, 0)]
    assert tp.heap_bytes - before < 4 << 20


def test_iterations_module_forward_is_the_outermost_repeating_module(load_trace):
    """nn.Module frames are markers per name; a same-name frame nested inside one does not start an
    iteration, and Net_0 (3 outermost, 2400 us) beats Linear_0 (3, 300 us) on time."""
    t = _three_iterations(lambda s: [PythonFrame("nn.Module: Net_0", s, 800),
                                     PythonFrame("nn.Module: Linear_0", s + 10, 100),
                                     PythonFrame("nn.Module: Net_0", s + 200, 50),
                                     CpuOp("aten::mm", s + 20, 10)])
    assert _windows(load_trace(t)) == [(1, "module_forward", "nn.Module: Net_0", 0, 1000, 0),
                                       (2, "module_forward", "nn.Module: Net_0", 1000, 1000, 0),
                                       (3, "module_forward", "nn.Module: Net_0", 2000, 800, 0)]


def test_iterations_optimizer_step_outranks_module_forward_and_ends_windows(load_trace):
    """Optimizer.step#... (priority 2) wins over a repeating nn.Module (3); it is an end marker: the first
    window runs from the capture start to the first step's end."""
    t = _three_iterations(lambda s: [PythonFrame("nn.Module: Net_0", s, 400),
                                     CpuOp("Optimizer.step#SGD.step", s + 500, 100, cat="user_annotation")])
    assert _windows(load_trace(t)) == [(1, "optimizer_step", "Optimizer.step#SGD.step", 0, 600, 0),
                                       (2, "optimizer_step", "Optimizer.step#SGD.step", 600, 1000, 0),
                                       (3, "optimizer_step", "Optimizer.step#SGD.step", 1600, 1000, 0)]


def test_iterations_dataloader_outranks_every_host_marker(load_trace):
    name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    t = _three_iterations(lambda s: [CpuOp(name, s + 5, 50, cat="user_annotation"),
                                     CpuOp("Optimizer.step#SGD.step", s + 500, 100, cat="user_annotation")])
    assert _windows(load_trace(t)) == [(1, "dataloader", name, 5, 1000, 0), (2, "dataloader", name, 1005, 1000, 0),
                                       (3, "dataloader", name, 2005, 595, 0)]


def test_iterations_annotation_marker_leaves_out_other_markers_names(load_trace):
    """Optimizer.* annotations repeat more often (6) than myloop (3), but the generic annotation kind never
    takes a name that belongs to another marker kind (or a ProfilerStep-like name). An annotation is a span
    marker: each window is its own 900 us range."""
    t = _three_iterations(lambda s: [CpuOp("myloop", s, 900, cat="user_annotation"),
                                     CpuOp("Optimizer.zero_grad#SGD.zero_grad", s + 910, 20, cat="user_annotation"),
                                     CpuOp("Optimizer.zero_grad#SGD.zero_grad", s + 950, 20, cat="user_annotation"),
                                     CpuOp("ProfilerStep#x", s + 940, 5, cat="user_annotation")])
    assert _windows(load_trace(t)) == [(1, "annotation", "myloop", 0, 900, 0), (2, "annotation", "myloop", 1000, 900, 0),
                                       (3, "annotation", "myloop", 2000, 900, 0)]


def test_iterations_execute_model_as_frame_or_annotation_and_capture_fallback(load_trace):
    """execute_model markers are python frames or annotations; a marker seen once is no iteration: the
    whole capture is the one window."""
    t = _three_iterations(lambda s: [PythonFrame("worker.py(88): execute_model", s, 600),
                                     CpuOp("model_runner.execute_model", s + 700, 100, cat="user_annotation")])
    got = _windows(load_trace(t))
    # both names repeat 3 times; the frame (1800 us) beats the annotation (300 us) on time
    assert got[0][:3] == (1, "execute_model", "worker.py(88): execute_model") and len(got) == 3
    once = KinetoTrace([PythonFrame("worker.py(88): execute_model", 0, 600), CpuOp("aten::mm", 700, 100)])
    assert _windows(load_trace(once)) == [(1, "capture", None, 0, 800, 0)]


def test_iterations_marker_counts_per_thread(load_trace):
    """A marker name seen on several threads is one candidate per thread: the loop thread's 3 windows, not
    4 windows cut by the same annotation on a second thread (a serving pool's per-request markers)."""
    t = _three_iterations(lambda s: [CpuOp("loop", s, 800, cat="user_annotation")])
    t.add(CpuOp("loop", 1500, 50, cat="user_annotation", tid=2))
    assert _windows(load_trace(t)) == [(1, "annotation", "loop", 0, 800, 0), (2, "annotation", "loop", 1000, 800, 0),
                                       (3, "annotation", "loop", 2000, 800, 0)]


@pytest.mark.parametrize("second_dur,expected", [
    # the two markers span 0..2000 us of a 4000 us capture: exactly half, accepted
    (1000, [(1, "annotation", "loop", 0, 500, 0), (2, "annotation", "loop", 1000, 1000, 0)]),
    # 1 us less: a marker in a corner of the capture is no iteration; the capture is the window
    (999, [(1, "capture", None, 0, 4000, 0)]),
])
def test_iterations_marker_must_span_half_the_capture(load_trace, second_dur, expected):
    t = KinetoTrace([CpuOp("loop", 0, 500, cat="user_annotation"), CpuOp("loop", 1000, second_dur, cat="user_annotation"),
                     CpuOp("aten::add", 3990, 10)])
    assert _windows(load_trace(t)) == expected


def _launching_loop(windows_with_launch: int) -> KinetoTrace:
    """Four 1000 us `loop` windows; the first `windows_with_launch` of them launch a 50 us kernel."""
    t = KinetoTrace([CpuOp("loop", s, 900, cat="user_annotation") for s in (0, 1000, 2000, 3000)])
    for i in range(windows_with_launch):
        t.add(Launch(i + 1, i * 1000 + 100, 5), Kernel(i + 1, i * 1000 + 110, 50))
    return t


def test_iterations_marker_windows_must_hold_device_work(load_trace):
    """With device work in the process, at least half of the windows must hold a launch: 2 of 4 is
    accepted (each window its own 900 us range); 1 of 4 is a CPU-side loop, and the capture, read over the
    device's active span (110..160 us), is the window."""
    assert _windows(load_trace(_launching_loop(2))) == [
        (1, "annotation", "loop", 0, 900, 0), (2, "annotation", "loop", 1000, 900, 0),
        (3, "annotation", "loop", 2000, 900, 0), (4, "annotation", "loop", 3000, 900, 0)]
    assert _windows(load_trace(_launching_loop(1))) == [(1, "capture", None, 110, 50, 0)]


def test_iterations_tail_after_the_device_work_is_outside_the_last_window(load_trace):
    """The last start-marker window (a forward frame) ends at the last device activity (2520 us), not at
    the capture end (3010 us): the idle tail after a server's last request is no host compute of an
    iteration."""
    t = KinetoTrace([CpuOp("aten::add", 3000, 10)])
    for i in range(3):
        t.add(PythonFrame("nn.Module: Net_0", i * 1000, 100), Launch(i + 1, i * 1000 + 10, 5),
              Kernel(i + 1, i * 1000 + 20, 500))
    assert _windows(load_trace(t)) == [(1, "module_forward", "nn.Module: Net_0", 0, 1000, 0),
                                       (2, "module_forward", "nn.Module: Net_0", 1000, 1000, 0),
                                       (3, "module_forward", "nn.Module: Net_0", 2000, 520, 0)]


@pytest.mark.parametrize("kernel_us,expected_dur", [
    # the 500 us kernel launched inside the 100 us request runs on after it: the window ends at its end
    (500, 520),
    # a kernel that ends inside the range: the window is the range
    (50, 100),
    # device work running past the next request's start: the window stops there (windows never overlap)
    (1200, 1000),
])
def test_iterations_a_span_window_is_its_range_and_the_device_work_it_launched(load_trace, kernel_us, expected_dur):
    """A user annotation (record_function) is a span marker: its window is its own range, extended to the
    end of the device work launched inside it; the time between two requests is in no window."""
    t = KinetoTrace([CpuOp("aten::add", 3000, 10)])
    for i in range(3):
        # the first request's kernel is `kernel_us` long (on a stream of its own), the others 50 us
        t.add(CpuOp("loop", i * 1000, 100, cat="user_annotation"), Launch(i + 1, i * 1000 + 10, 5),
              Kernel(i + 1, i * 1000 + 20, kernel_us if i == 0 else 50, stream=8 if i == 0 else 7))
    got = _windows(load_trace(t))
    assert [w[:4] for w in got] == [(k + 1, "annotation", "loop", 1000 * k) for k in range(3)]
    assert [w[4] for w in got] == [expected_dur, 100, 100]


@pytest.mark.parametrize("first_kernel_us,source", [
    # the first kernel starts exactly where the last step ends: no step holds any device work (lagged)
    (3000, "capture"),
    # 1 us earlier the last step holds it: the steps stay the windows
    (2999, "profiler_step"),
])
def test_iterations_steps_that_hold_no_device_work_give_way_to_the_device_span(load_trace, first_kernel_us, source):
    """Three 1000 us ProfilerSteps launch 3 kernels of 400 us that run back to back from `first_kernel_us`
    (a device lagging its host): steps that hold none of the device's work cannot measure it, and the
    device's active span is the window."""
    t = KinetoTrace([ProfilerStep(5 + k, ts_us=k * 1000, dur_us=1000) for k in range(3)])
    for i in range(3):
        t.add(CpuOp("aten::conv2d", i * 1000 + 10, 20), Launch(i + 1, i * 1000 + 15, 5),
              Kernel(i + 1, first_kernel_us + 400 * i, 400))
    got = _windows(load_trace(t))
    if source == "capture":
        assert got == [(1, "capture", None, 3000, 1200, 0)]
    else:
        assert got == [(5, "profiler_step", "ProfilerStep#5", 0, 1000, 0), (6, "profiler_step", "ProfilerStep#6", 1000, 1000, 0),
                       (7, "profiler_step", "ProfilerStep#7", 2000, 1000, 0)]


def test_iterations_tail_after_the_last_host_event_is_outside_the_last_window(load_trace):
    """Without device activity the last start-marker window ends at the main process's last host event
    (the op ending at 2600 us), not at the capture end (5000 us, set by another process's event): the
    profiler's stop after a server's last request is no host time of an iteration. An op that ends at the
    capture end keeps the window to it (the half-capture test above)."""
    t = KinetoTrace([CpuOp("aten::add", 2590, 10), CpuOp("profiler_tail", 4990, 10, cat="user_annotation", pid=900, tid=9)])
    for i in range(3):
        t.add(PythonFrame("nn.Module: Net_0", i * 1000, 500))
    assert _windows(load_trace(t)) == [(1, "module_forward", "nn.Module: Net_0", 0, 1000, 0),
                                       (2, "module_forward", "nn.Module: Net_0", 1000, 1000, 0),
                                       (3, "module_forward", "nn.Module: Net_0", 2000, 600, 0)]


def test_python_gc_step_of_its_own_process(load_trace):
    """A GC pass gets the step window of its own process holding its start (the latest-starting one
    where windows overlap); a pass outside every window, or in a process without steps, gets none."""
    t = KinetoTrace([
        ProfilerStep(1, ts_us=0, dur_us=1000), ProfilerStep(2, ts_us=1000, dur_us=1000),
        PythonFrame("Python GC", 100, 10), PythonFrame("<built-in method collect of module gc object>", 300, 5),
        PythonFrame("Python GC", 1500, 10), PythonFrame("Python GC", 2500, 10),
        PythonFrame("Python GC", 500, 10, pid=200, tid=2),
        ProfilerStep(7, ts_us=0, dur_us=3000, pid=300, tid=3), ProfilerStep(8, ts_us=1000, dur_us=500, pid=300, tid=3),
        PythonFrame("Python GC", 1200, 10, pid=300, tid=3), PythonFrame("Python GC", 2000, 10, pid=300, tid=3),
    ])
    got = rows(load_trace(t), "INCLUDE PERFETTO MODULE kineto.lib.python_gc",
               "SELECT name, ts / 1000, step FROM kineto_python_gc ORDER BY ts, step")
    assert got == [("Python GC", 100, 1), ("<built-in method collect of module gc object>", 300, 1),
                   ("Python GC", 500, None), ("Python GC", 1200, 8), ("Python GC", 1500, 2),
                   ("Python GC", 2000, 7), ("Python GC", 2500, None)]
