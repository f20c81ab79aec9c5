"""FLOP / byte models (kineto.lib.op_flops), the device spec table and the op roofline, on builder traces
whose numbers are computed by hand in the comments."""
from __future__ import annotations

import pytest

from kineto_sql.run.runner import run_query
from tests.kineto_builder import CpuOp, Kernel, KinetoTrace, Launch, ProfilerStep
from tests.query_support import load_trace  # noqa: F401  (fixture)

H100 = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}


def shaped(name, ts, dims, types, concrete=None, dur=20, **kw):
    args = {"Input Dims": dims, "Input type": types}
    if concrete is not None:
        args["Concrete Inputs"] = concrete
    return CpuOp(name, ts_us=ts, dur_us=dur, args=args, **kw)


def op_with_kernel(name, ts, corr, kernel_us, dims, types, concrete=None):
    """An op, the launch inside it and its kernel (kernel_us long)."""
    return [shaped(name, ts, dims, types, concrete),
            Launch(correlation=corr, ts_us=ts + 2, dur_us=3),
            Kernel(correlation=corr, ts_us=ts + 10, dur_us=kernel_us, name=f"k_{corr}")]


BF, F32, HALF = "c10::BFloat16", "float", "c10::Half"


def model_trace() -> KinetoTrace:
    events = [ProfilerStep(1, ts_us=0, dur_us=5000)]
    # aten::linear -> aten::addmm: bias [64], A [128, 256], B [256, 64]; the kernel is launched by addmm.
    events += [shaped("aten::linear", 100, [[128, 256], [64, 256], [64]], [BF, BF, BF], dur=60)]
    events += op_with_kernel("aten::addmm", 105, 1, 10, [[64], [128, 256], [256, 64], [], []],
                             [BF, BF, BF, "Scalar", "Scalar"])
    # convolution: x [2, 3, 32, 32], w [16, 3, 3, 3], bias [16], stride 2, padding 1 (fp32).
    events += op_with_kernel("aten::convolution", 300, 2, 4,
                             [[2, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], [], [], []],
                             [F32, F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList",
                              "Scalar"],
                             ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])
    # convolution_backward: grad_out [2, 16, 16, 16], input, weight; grad_input and grad_weight.
    events += op_with_kernel("aten::convolution_backward", 500, 3, 8,
                             [[2, 16, 16, 16], [2, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], [], [], [], []],
                             [F32, F32, F32] + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"],
                             ["", "", "", "[16]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1",
                              "[True, True, False]"])
    # flash attention, causal: q k v [2, 4, 128, 64] bf16.
    events += op_with_kernel("aten::_scaled_dot_product_flash_attention", 700, 4, 16,
                             [[2, 4, 128, 64]] * 3 + [[], [], [], []], [BF] * 3 + ["Scalar"] * 4,
                             ["", "", "", "0.", "True", "False", ""])
    # bmm [4, 32, 16] x [4, 16, 8] fp16.
    events += op_with_kernel("aten::bmm", 900, 5, 2, [[4, 32, 16], [4, 16, 8]], [HALF, HALF])
    # matmul [3, 5, 7] x [7, 2] fp32 with no child op: batch 3.
    events += op_with_kernel("aten::matmul", 1100, 6, 2, [[3, 5, 7], [7, 2]], [F32, F32])
    # native_layer_norm [4, 1024] with weight and bias [1024] bf16.
    events += op_with_kernel("aten::native_layer_norm", 1300, 7, 2, [[4, 1024], [], [1024], [1024], []],
                             [BF, "ScalarList", BF, BF, "Scalar"])
    # add [1000] + [1000] fp32.
    events += op_with_kernel("aten::add", 1500, 8, 1, [[1000], [1000], []], [F32, F32, "Scalar"])
    # a transposed convolution has no model.
    events += op_with_kernel("aten::convolution", 1700, 9, 1,
                             [[2, 3, 32, 32], [3, 16, 3, 3], [], [], [], [], [], [], []],
                             [F32, F32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList",
                              "Scalar"],
                             ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"])
    return KinetoTrace(events, metadata=H100)


def flops_rows(tp):
    tp.query("INCLUDE PERFETTO MODULE kineto.lib.op_flops")
    df = tp.df("SELECT name, family, shape, precision, flops, bytes FROM kineto_op_flops ORDER BY id")
    return [tuple(r) for r in df.itertuples(index=False)]


def test_flop_and_byte_models_by_hand(load_trace):
    rows = flops_rows(load_trace(model_trace()))
    assert rows == [
        # linear: 2*128*64*256 + 128*64 bias = 4_202_496; bytes 2*(128*256 + 64*256 + 128*64 + 64) = 114_816
        ("aten::linear", "gemm", "M=128 N=64 K=256", "bf16", 4_202_496.0, 114_816.0),
        ("aten::addmm", "gemm", "M=128 N=64 K=256", "bf16", 4_202_496.0, 114_816.0),
        # Ho = (32 + 2 - 2 - 1) // 2 + 1 = 16; 2*2*16*(16*16)*(3*3*3) = 442_368;
        # bytes 4*(6144 input + 432 weight + 8192 output + 16 bias) = 59_136
        ("aten::convolution", "conv", "N=2 K=16 out=256 CRS=27", "fp32", 442_368.0, 59_136.0),
        # two gradients: 2 x 442_368; bytes 4*(8192 dout + 6144 x + 432 w + 6144 dx + 432 dw) = 85_376
        ("aten::convolution_backward", "conv", "N=2 K=16 out=256 CRS=27 grads=2", "fp32", 884_736.0, 85_376.0),
        # 2*8*128*128*(64+64)*0.5 = 16_777_216; bytes 2*(3*65_536 + 65_536 out) = 524_288
        ("aten::_scaled_dot_product_flash_attention", "attention", "BH=8 Lq=128 Lk=128 D=64 causal", "bf16",
         16_777_216.0, 524_288.0),
        # 2*4*32*8*16 = 32_768; bytes 2*(2048 + 512 + 1024) = 7_168
        ("aten::bmm", "gemm", "M=32 N=8 K=16 batch=4", "fp16", 32_768.0, 7_168.0),
        # 2*3*5*2*7 = 420; bytes 4*(105 + 14 + 30) = 596
        ("aten::matmul", "gemm", "M=5 N=2 K=7 batch=3", "fp32", 420.0, 596.0),
        # 5 * 4096 = 20_480; bytes 2*(4096 + 1024 + 1024 + 4096 out) = 20_480
        ("aten::native_layer_norm", "norm", "[4, 1024]", "bf16", 20_480.0, 20_480.0),
        # 1000; bytes 4*(1000 + 1000 + 1000 out) = 12_000
        ("aten::add", "elementwise", "[1000]", "fp32", 1_000.0, 12_000.0),
    ]


def test_conv_backward_counts_only_the_gradients_asked_for(load_trace):
    trace = KinetoTrace([shaped("aten::convolution_backward", 10,
                                [[2, 16, 16, 16], [2, 3, 32, 32], [16, 3, 3, 3]], [F32, F32, F32],
                                ["", "", "", "[16]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1",
                                 "[False, True, False]"])])
    rows = flops_rows(load_trace(trace))
    # grad_weight only: 442_368 FLOPs; bytes 4*(8192 + 6144 + 432 + 432 dw) = 60_800
    assert rows == [("aten::convolution_backward", "conv", "N=2 K=16 out=256 CRS=27 grads=1", "fp32",
                     442_368.0, 60_800.0)]


def test_kineto_flops_arg_wins(load_trace):
    op = CpuOp("aten::mm", ts_us=10, dur_us=5,
               args={"Input Dims": [[8, 4], [4, 2]], "Input type": [F32, F32], "flops": 999})
    tp = load_trace(KinetoTrace([op]))
    tp.query("INCLUDE PERFETTO MODULE kineto.lib.op_flops")
    df = tp.df("SELECT flops, bytes, flops_source FROM kineto_op_flops")
    # 2*8*2*4 = 128 by the model, but the trace says 999; bytes 4*(32 + 8 + 16) = 224 either way
    assert [tuple(r) for r in df.itertuples(index=False)] == [(999.0, 224.0, "kineto")]


@pytest.mark.parametrize(("name", "model"), [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200 SXM"),
    ("NVIDIA B200", "B200"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
    ("NVIDIA A100-PG509-200", "A100 SXM4 40GB"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA A10", "A10"),
    ("Tesla V100-SXM2-32GB", "V100 SXM2"),
    ("Tesla V100-PCIE-16GB", "V100 PCIe"),
    ("AMD Instinct MI300X", "MI300X"),
    ("AMD Instinct MI325X", "MI325X"),
    ("AMD Instinct MI250X", "MI250X (per GCD)"),
    ("AMD Instinct MI210", "MI210"),
    ("AMD Radeon Graphics", None),
])
def test_device_spec_matching(load_trace, name, model):
    from kineto_sql.sql.literals import table_function_call

    tp = load_trace(KinetoTrace([CpuOp("aten::mm", ts_us=0, dur_us=1)]))
    tp.query("INCLUDE PERFETTO MODULE kineto.lib.device_specs")
    df = tp.df(table_function_call("_kineto_device_spec_for", [name]))
    assert (df.model[0] if len(df) else None) == model


def test_every_spec_row_has_a_source_and_dense_numbers(load_trace):
    tp = load_trace(KinetoTrace([CpuOp("aten::mm", ts_us=0, dur_us=1)]))
    tp.query("INCLUDE PERFETTO MODULE kineto.lib.device_specs")
    df = tp.df("SELECT * FROM kineto_device_specs")
    assert {"A100 SXM4 80GB", "H100 SXM", "H100 PCIe", "H200 SXM", "B200", "L4", "A10", "MI250X (per GCD)",
            "MI300X", "MI325X"} <= set(df.model)
    assert df.source.str.contains("https://").all()
    assert (df.hbm_tbps > 0).all() and (df.fp32_tflops > 0).all()
    h100 = df[df.model == "H100 SXM"].iloc[0]
    assert (h100.bf16_tflops, h100.hbm_tbps) == (989.4, 3.35)   # dense, not the 1979 sparse figure


def test_roofline_innermost_op_owns_the_kernel(load_trace):
    run = run_query(load_trace(model_trace()), "reading.op_roofline")
    df = run.df.set_index("name")
    assert "aten::linear" not in df.index               # its addmm child carries the kernel
    addmm = df.loc["aten::addmm"]
    assert addmm.model == "H100 SXM" and addmm.calls == 1 and addmm.device_dur == 10_000
    # 4_202_496 FLOPs in 10 us = 0.4202496 TFLOP/s; 114_816 B in 10 us = 0.0114816 TB/s
    assert addmm.achieved_tflops == pytest.approx(0.4202496)
    assert addmm.achieved_tbps == pytest.approx(0.0114816)
    # intensity 36.6 FLOP/B < ridge 989.4 / 3.35 = 295.3: memory-bound; roof 36.6 * 3.35 TFLOP/s
    assert addmm.intensity == pytest.approx(4_202_496 / 114_816)
    assert addmm.bound == "memory"
    assert addmm.pct_of_roof == pytest.approx(100 * 0.0114816 / 3.35)
    # fp32 convolution against the TF32 peak (494.7): 442_368 FLOPs / 4 us = 0.110592 TFLOP/s
    conv = df.loc["aten::convolution"]
    assert conv.peak_tflops == 494.7 and conv.achieved_tflops == pytest.approx(0.110592)
    assert conv.calls == 1                               # the transposed one has no model and no row
    # fp32 matmul against the CUDA-core fp32 peak, layer norm against it too
    assert df.loc["aten::matmul"].peak_tflops == 66.9
    assert df.loc["aten::native_layer_norm"].peak_tflops == 66.9


def test_roofline_without_known_device_leaves_peaks_empty(load_trace):
    trace = model_trace()
    trace.metadata = {}
    df = run_query(load_trace(trace), "reading.op_roofline").df
    assert df.model.isna().all() and df.pct_of_roof.isna().all()
    assert df.achieved_tflops.notna().all()


def test_roofline_device_name_param_overrides_the_trace(load_trace):
    df = run_query(load_trace(model_trace()), "reading.op_roofline", {"device_name": "AMD Instinct MI300X"}).df
    assert set(df.model) == {"MI300X"}
