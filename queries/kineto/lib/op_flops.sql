-- version: 4

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.dtypes;

-- Which ATen ops have a FLOP / byte model, and where their arguments sit (positions in `Input Dims` /
-- `Concrete Inputs`, -1 = none). One model per `kind`:
-- - mm A[M,K] B[K,N], addmm C A B, bmm A[b,M,K] B[b,K,N], baddbmm C A B, linear x[...,K] W[N,K] bias,
--   matmul A[...,M,K] B[...,K,N] (broadcast batch; B 1-D = a matrix-vector product):
--   FLOPs 2*batch*M*N*K, plus batch*M*N for the bias / C add; bytes: both operands, the output and the
--   bias, read or written once.
-- - conv: N*K*Ho*Wo output points, each 2*(C/groups)*R*S FLOPs; Ho = (H + 2p - d(R-1) - 1) / s + 1 from
--   stride / padding / dilation in Concrete Inputs; 1-D and 2-D; transposed convolutions are left out.
--   Bytes: input, weight and output once.
-- - conv_bwd (aten::convolution_backward): the forward count once per gradient in output_mask
--   (grad_input, grad_weight); spatial sizes come from grad_output itself.
-- - sdpa: 2*B*H*Lq*Lk*(D + Dv) (QK^T and PV), halved when is_causal; backward ops are 2.5x the forward
--   (two matmuls to recompute, five in all, as FlashAttention's paper counts). Bytes: q, k, v and the
--   output once (backward: read q k v out dout, write dq dk dv: 2x).
-- - exps: the exponentials a special-function unit evaluates (kineto.lib.op_roofline's roof for attention):
--   one per attention score B*H*Lq*Lk (halved when causal), forward and backward alike (the backward
--   recomputes P = exp(S - logsumexp) once, FlashAttention-2 Algorithm 2); one per element for softmax
--   and log_softmax; 0 for every other op.
-- - elementwise / norm / reduction: FLOPs = elements x a nominal per-element count (1 for add / mul /
--   relu, 5 for a normalisation, 8 for gelu); these ops are memory-bound on every GPU in
--   kineto.lib.device_specs, so the byte count is what matters: every tensor input read once plus the
--   output written once (reductions write a negligible output; in-place ops write their input).
-- The innermost op with a model is the one that owns the kernels (aten::linear -> aten::addmm, SDPA ->
-- _scaled_dot_product_flash_attention), so the roofline query counts that one and not its parents.
CREATE OR REPLACE PERFETTO TABLE _kineto_op_models(
  -- ATen op name.
  name STRING,
  -- gemm, conv, attention, elementwise, norm, reduction.
  family STRING,
  -- mm, addmm, bmm, baddbmm, linear, matmul, conv, conv_bwd, sdpa, pointwise.
  kind STRING,
  -- Input index of the first operand (GEMM A, conv input / grad_output, attention q, pointwise input).
  a LONG,
  -- Input index of the second operand (GEMM B, conv weight / input, attention k).
  b LONG,
  -- Input index of the bias / C / conv-backward weight, -1 = none.
  c LONG,
  -- Concrete Inputs index of stride (conv) or of is_causal (attention); -1 = none.
  p_stride LONG,
  -- Concrete Inputs index of padding (conv) or of output_mask (conv_bwd); -1 = none.
  p_padding LONG,
  -- Concrete Inputs index of dilation (conv).
  p_dilation LONG,
  -- Concrete Inputs index of transposed (conv), -1 = none.
  p_transposed LONG,
  -- Concrete Inputs index of groups (conv).
  p_groups LONG,
  -- FLOP multiplier over the forward count (2.5 for attention backward).
  mult DOUBLE,
  -- Nominal FLOPs per element (pointwise kinds).
  flops_per_elem DOUBLE,
  -- 1 when the op writes an output as large as its largest input (pointwise kinds).
  writes_out LONG
) AS
WITH m(name, family, kind, a, b, c, ps, pp, pd, pt, pg, mult, fpe, w) AS (
  VALUES
    ('aten::mm', 'gemm', 'mm', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::addmm', 'gemm', 'addmm', 1, 2, 0, -1, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::bmm', 'gemm', 'bmm', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::baddbmm', 'gemm', 'baddbmm', 1, 2, 0, -1, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::linear', 'gemm', 'linear', 0, 1, 2, -1, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::matmul', 'gemm', 'matmul', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::conv1d', 'conv', 'conv', 0, 1, 2, 3, 4, 5, -1, 6, 1.0, 0.0, 1),
    ('aten::conv2d', 'conv', 'conv', 0, 1, 2, 3, 4, 5, -1, 6, 1.0, 0.0, 1),
    ('aten::convolution', 'conv', 'conv', 0, 1, 2, 3, 4, 5, 6, 8, 1.0, 0.0, 1),
    ('aten::_convolution', 'conv', 'conv', 0, 1, 2, 3, 4, 5, 6, 8, 1.0, 0.0, 1),
    ('aten::cudnn_convolution', 'conv', 'conv', 0, 1, -1, 3, 2, 4, -1, 5, 1.0, 0.0, 1),
    ('aten::miopen_convolution', 'conv', 'conv', 0, 1, 2, 4, 3, 5, -1, 6, 1.0, 0.0, 1),
    ('aten::convolution_backward', 'conv', 'conv_bwd', 0, 1, 2, -1, 10, -1, 7, 9, 1.0, 0.0, 1),
    ('aten::scaled_dot_product_attention', 'attention', 'sdpa', 0, 1, 2, 5, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::_scaled_dot_product_flash_attention', 'attention', 'sdpa', 0, 1, 2, 4, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::_scaled_dot_product_efficient_attention', 'attention', 'sdpa', 0, 1, 2, 6, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::_scaled_dot_product_cudnn_attention', 'attention', 'sdpa', 0, 1, 2, 6, -1, -1, -1, -1, 1.0, 0.0, 1),
    ('aten::_scaled_dot_product_flash_attention_backward', 'attention', 'sdpa', 1, 2, 3, 11, -1, -1, -1, -1, 2.5, 0.0, 1),
    ('aten::_scaled_dot_product_efficient_attention_backward', 'attention', 'sdpa', 1, 2, 3, 11, -1, -1, -1, -1, 2.5, 0.0, 1),
    ('aten::add', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::add_', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::sub', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::mul', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::mul_', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::div', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::div_', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::relu', 'elementwise', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::relu_', 'elementwise', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::clamp_min', 'elementwise', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::clamp_min_', 'elementwise', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::threshold_backward', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 1),
    ('aten::gelu', 'elementwise', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 8.0, 1),
    ('aten::gelu_backward', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 8.0, 1),
    ('aten::silu', 'elementwise', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 4.0, 1),
    ('aten::silu_backward', 'elementwise', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 4.0, 1),
    ('aten::sigmoid', 'elementwise', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 4.0, 1),
    ('aten::tanh', 'elementwise', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 4.0, 1),
    ('aten::native_layer_norm', 'norm', 'pointwise', 0, 2, 3, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::native_layer_norm_backward', 'norm', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::native_batch_norm', 'norm', 'pointwise', 0, 1, 2, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::cudnn_batch_norm', 'norm', 'pointwise', 0, 1, 2, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::miopen_batch_norm', 'norm', 'pointwise', 0, 1, 2, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::native_batch_norm_backward', 'norm', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::_fused_rms_norm', 'norm', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 4.0, 1),
    ('aten::_softmax', 'norm', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::_log_softmax', 'norm', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::_softmax_backward_data', 'norm', 'pointwise', 0, 1, -1, -1, -1, -1, -1, -1, 1.0, 5.0, 1),
    ('aten::sum', 'reduction', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 0),
    ('aten::mean', 'reduction', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 0),
    ('aten::amax', 'reduction', 'pointwise', 0, -1, -1, -1, -1, -1, -1, -1, 1.0, 1.0, 0)
)
SELECT
  name, family, kind, a, b, c,
  ps AS p_stride, pp AS p_padding, pd AS p_dilation, pt AS p_transposed, pg AS p_groups,
  mult, fpe AS flops_per_elem, w AS writes_out
FROM m;

-- FLOPs and bytes of every ATen op that has a model (see _kineto_op_models) and whose shapes were
-- recorded (record_shapes). Kineto's own `flops` arg (with_flops) wins over the model where present.
-- An op whose shapes do not fit its model (a transposed or 3-D convolution, a 1-D matmul operand) has
-- no row: its children, if they have one, carry the work.
CREATE OR REPLACE PERFETTO TABLE kineto_op_flops(
  -- cpu op slice id.
  id JOINID(slice.id),
  -- Op name.
  name STRING,
  -- gemm, conv, attention, elementwise, norm, reduction.
  family STRING,
  -- Shape in words, e.g. `M=141 N=30522 K=512` or the first input's dims.
  shape STRING,
  -- Precision of the first operand: bf16, fp16, fp32, fp64, fp8, int.
  precision STRING,
  -- Floating point operations (multiply and add count 2).
  flops DOUBLE,
  -- Bytes moved to and from device memory by the model (each tensor once).
  bytes DOUBLE,
  -- Exponentials on the special-function units (attention scores, softmax elements; 0 for other ops).
  exps DOUBLE,
  -- model or kineto (the trace's own `flops` arg).
  flops_source STRING
) AS
WITH
  -- The model's operands (inputs a, b, c) of each op with a model and recorded shapes (record_shapes):
  -- rank, first four dims, last two dims, element count and element size, read from `Input Dims[i][j]` /
  -- `Input type[i]` with one args lookup per dim of each operand (an op without shapes costs one lookup,
  -- dims 4-8 are looked up only for operands of rank 4 or more). An operand with no dims or more than 8
  -- is absent (NULL). Materialized once: every formula below reads it.
  ops AS (
    SELECT
      o.id, o.name, o.arg_set_id, m.family, m.kind, m.a, m.b, m.c, m.p_stride, m.p_padding,
      m.p_dilation, m.p_transposed, m.mult, m.flops_per_elem, m.writes_out
    FROM kineto_cpu_ops AS o
    JOIN _kineto_op_models AS m
      USING (name)
  ),
  -- Dims 0-3 of each operand (an operand the model has not, index -1, is not looked up) and the types.
  dims_lo AS MATERIALIZED (
    SELECT
      o.*,
      extract_arg(o.arg_set_id, 'args.Input Dims[' || o.a || '][0]') AS a0,
      extract_arg(o.arg_set_id, 'args.Input Dims[' || o.a || '][1]') AS a1,
      extract_arg(o.arg_set_id, 'args.Input Dims[' || o.a || '][2]') AS a2,
      extract_arg(o.arg_set_id, 'args.Input Dims[' || o.a || '][3]') AS a3,
      IIF(o.b < 0, NULL, extract_arg(o.arg_set_id, 'args.Input Dims[' || o.b || '][0]')) AS b0,
      IIF(o.b < 0, NULL, extract_arg(o.arg_set_id, 'args.Input Dims[' || o.b || '][1]')) AS b1,
      IIF(o.b < 0, NULL, extract_arg(o.arg_set_id, 'args.Input Dims[' || o.b || '][2]')) AS b2,
      IIF(o.b < 0, NULL, extract_arg(o.arg_set_id, 'args.Input Dims[' || o.b || '][3]')) AS b3,
      IIF(o.c < 0, NULL, extract_arg(o.arg_set_id, 'args.Input Dims[' || o.c || '][0]')) AS c0,
      IIF(o.c < 0, NULL, extract_arg(o.arg_set_id, 'args.Input Dims[' || o.c || '][1]')) AS c1,
      IIF(o.c < 0, NULL, extract_arg(o.arg_set_id, 'args.Input Dims[' || o.c || '][2]')) AS c2,
      IIF(o.c < 0, NULL, extract_arg(o.arg_set_id, 'args.Input Dims[' || o.c || '][3]')) AS c3,
      extract_arg(o.arg_set_id, 'args.Input type[' || o.a || ']') AS ta,
      IIF(o.b < 0, NULL, extract_arg(o.arg_set_id, 'args.Input type[' || o.b || ']')) AS tb,
      IIF(o.c < 0, NULL, extract_arg(o.arg_set_id, 'args.Input type[' || o.c || ']')) AS tc
    FROM ops AS o
    WHERE
      extract_arg(o.arg_set_id, 'args.Input Dims[' || o.a || '][0]') IS NOT NULL
  ),
  -- Dims 4-8, looked up only for operands of rank 4 or more.
  dims AS MATERIALIZED (
    SELECT
      d.*,
      IIF(d.a3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.a || '][4]')) AS a4,
      IIF(d.a3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.a || '][5]')) AS a5,
      IIF(d.a3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.a || '][6]')) AS a6,
      IIF(d.a3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.a || '][7]')) AS a7,
      IIF(d.a3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.a || '][8]')) AS a8,
      IIF(d.b3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.b || '][4]')) AS b4,
      IIF(d.b3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.b || '][5]')) AS b5,
      IIF(d.b3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.b || '][6]')) AS b6,
      IIF(d.b3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.b || '][7]')) AS b7,
      IIF(d.b3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.b || '][8]')) AS b8,
      IIF(d.c3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.c || '][4]')) AS c4,
      IIF(d.c3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.c || '][5]')) AS c5,
      IIF(d.c3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.c || '][6]')) AS c6,
      IIF(d.c3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.c || '][7]')) AS c7,
      IIF(d.c3 IS NULL, NULL, extract_arg(d.arg_set_id, 'args.Input Dims[' || d.c || '][8]')) AS c8
    FROM dims_lo AS d
  ),
  ranked AS MATERIALIZED (
    SELECT
      d.*,
      (a0 IS NOT NULL) + (a1 IS NOT NULL) + (a2 IS NOT NULL) + (a3 IS NOT NULL) + (a4 IS NOT NULL) + (a5 IS NOT NULL) + (a6 IS NOT NULL) + (a7 IS NOT NULL) + (a8 IS NOT NULL) AS na,
      (b0 IS NOT NULL) + (b1 IS NOT NULL) + (b2 IS NOT NULL) + (b3 IS NOT NULL) + (b4 IS NOT NULL) + (b5 IS NOT NULL) + (b6 IS NOT NULL) + (b7 IS NOT NULL) + (b8 IS NOT NULL) AS nb,
      (c0 IS NOT NULL) + (c1 IS NOT NULL) + (c2 IS NOT NULL) + (c3 IS NOT NULL) + (c4 IS NOT NULL) + (c5 IS NOT NULL) + (c6 IS NOT NULL) + (c7 IS NOT NULL) + (c8 IS NOT NULL) AS nc
    FROM dims AS d
  ),
  operands AS (
    SELECT
      r.*,
      IIF(r.na BETWEEN 1 AND 8, r.na, NULL) AS ra,
      IIF(r.nb BETWEEN 1 AND 8, r.nb, NULL) AS rb,
      IIF(r.nc BETWEEN 1 AND 8, r.nc, NULL) AS rc
    FROM ranked AS r
    WHERE
      r.na BETWEEN 1 AND 8
  ),
  shaped AS MATERIALIZED (
    SELECT
      o.id, o.name, o.arg_set_id, o.family, o.kind, o.p_stride, o.p_padding, o.p_dilation, o.p_transposed,
      o.mult, o.flops_per_elem, o.writes_out,
      o.ra, o.a0, o.a1, o.a2, o.a3,
      CASE o.ra WHEN 1 THEN o.a0 WHEN 2 THEN o.a1 WHEN 3 THEN o.a2 WHEN 4 THEN o.a3 WHEN 5 THEN o.a4
        WHEN 6 THEN o.a5 WHEN 7 THEN o.a6 WHEN 8 THEN o.a7 END AS al1,
      CASE o.ra WHEN 2 THEN o.a0 WHEN 3 THEN o.a1 WHEN 4 THEN o.a2 WHEN 5 THEN o.a3 WHEN 6 THEN o.a4
        WHEN 7 THEN o.a5 WHEN 8 THEN o.a6 END AS al2,
      o.a0 * coalesce(o.a1, 1) * coalesce(o.a2, 1) * coalesce(o.a3, 1) * coalesce(o.a4, 1)
        * coalesce(o.a5, 1) * coalesce(o.a6, 1) * coalesce(o.a7, 1) AS an,
      ta.bytes AS es,
      ta.precision,
      o.rb,
      IIF(o.rb IS NULL, NULL, o.b0) AS b0,
      IIF(o.rb IS NULL, NULL, o.b1) AS b1,
      IIF(o.rb IS NULL, NULL, o.b2) AS b2,
      IIF(o.rb IS NULL, NULL, o.b3) AS b3,
      CASE o.rb WHEN 1 THEN o.b0 WHEN 2 THEN o.b1 WHEN 3 THEN o.b2 WHEN 4 THEN o.b3 WHEN 5 THEN o.b4
        WHEN 6 THEN o.b5 WHEN 7 THEN o.b6 WHEN 8 THEN o.b7 END AS bl1,
      CASE o.rb WHEN 2 THEN o.b0 WHEN 3 THEN o.b1 WHEN 4 THEN o.b2 WHEN 5 THEN o.b3 WHEN 6 THEN o.b4
        WHEN 7 THEN o.b5 WHEN 8 THEN o.b6 END AS bl2,
      IIF(o.rb IS NULL, NULL, o.b0 * coalesce(o.b1, 1) * coalesce(o.b2, 1) * coalesce(o.b3, 1) * coalesce(o.b4, 1)
        * coalesce(o.b5, 1) * coalesce(o.b6, 1) * coalesce(o.b7, 1)) AS bn,
      IIF(o.rb IS NULL, NULL, tb.bytes) AS bes,
      o.rc,
      IIF(o.rc IS NULL, NULL, o.c0) AS c0,
      IIF(o.rc IS NULL, NULL, o.c1) AS c1,
      IIF(o.rc IS NULL, NULL, o.c2) AS c2,
      IIF(o.rc IS NULL, NULL, o.c3) AS c3,
      CASE o.rc WHEN 1 THEN o.c0 WHEN 2 THEN o.c1 WHEN 3 THEN o.c2 WHEN 4 THEN o.c3 WHEN 5 THEN o.c4
        WHEN 6 THEN o.c5 WHEN 7 THEN o.c6 WHEN 8 THEN o.c7 END AS cl1,
      IIF(o.rc IS NULL, NULL, o.c0 * coalesce(o.c1, 1) * coalesce(o.c2, 1) * coalesce(o.c3, 1) * coalesce(o.c4, 1)
        * coalesce(o.c5, 1) * coalesce(o.c6, 1) * coalesce(o.c7, 1)) AS cn,
      IIF(o.rc IS NULL, NULL, tc.bytes) AS ces
    FROM operands AS o
    -- CROSS JOIN keeps the operands outer: the planner would otherwise scan them once per dtype.
    CROSS JOIN kineto_dtypes AS ta
      ON ta.type = o.ta
    LEFT JOIN kineto_dtypes AS tb
      ON tb.type = o.tb
    LEFT JOIN kineto_dtypes AS tc
      ON tc.type = o.tc
  ),
  -- Matrix products as (batch, M, N, K, bias elements).
  gemm AS (
    SELECT
      s.*,
      CASE s.kind
        WHEN 'bmm' THEN s.a0 WHEN 'baddbmm' THEN s.a0
        WHEN 'matmul' THEN
          CASE
            WHEN s.ra >= 2 AND s.rb >= 2 THEN max(s.an / (s.al2 * s.al1), s.bn / (s.bl2 * s.bl1))
            WHEN s.ra >= 2 AND s.rb = 1 THEN s.an / (s.al2 * s.al1)
          END
        ELSE 1
      END AS g_batch,
      CASE s.kind
        WHEN 'linear' THEN s.an / s.al1
        WHEN 'matmul' THEN s.al2
        WHEN 'bmm' THEN s.a1 WHEN 'baddbmm' THEN s.a1
        ELSE s.a0
      END AS g_m,
      CASE s.kind
        WHEN 'linear' THEN s.b0
        WHEN 'matmul' THEN IIF(s.rb >= 2, s.bl1, 1)
        WHEN 'bmm' THEN s.b2 WHEN 'baddbmm' THEN s.b2
        ELSE s.b1
      END AS g_n,
      CASE s.kind
        WHEN 'bmm' THEN s.a2 WHEN 'baddbmm' THEN s.a2
        WHEN 'linear' THEN s.al1 WHEN 'matmul' THEN s.al1
        ELSE s.a1
      END AS g_k,
      coalesce(s.cn, 0) AS g_bias
    FROM shaped AS s
    WHERE
      s.family = 'gemm'
      AND (s.kind != 'linear' OR s.rb = 2)
      AND (s.kind NOT IN ('mm', 'addmm') OR (s.ra = 2 AND s.rb = 2))
      AND (s.kind NOT IN ('bmm', 'baddbmm') OR (s.ra = 3 AND s.rb = 3))
  ),
  conv_args AS (
    SELECT
      s.*,
      extract_arg(s.arg_set_id, 'args.Concrete Inputs[' || s.p_stride || ']') AS stride_t,
      extract_arg(s.arg_set_id, 'args.Concrete Inputs[' || s.p_padding || ']') AS padding_t,
      extract_arg(s.arg_set_id, 'args.Concrete Inputs[' || s.p_dilation || ']') AS dilation_t,
      extract_arg(s.arg_set_id, 'args.Concrete Inputs[' || s.p_transposed || ']') AS transposed_t
    FROM shaped AS s
    WHERE
      s.family = 'conv'
      AND s.ra IN (3, 4)
      AND s.rb = s.ra
      AND (s.kind = 'conv' OR s.rc = s.ra)
  ),
  -- Convolutions as (N, K, output points per image, C/groups x kernel points, gradients computed).
  conv AS (
    SELECT
      c.*,
      -- forward: weight [K, C/g, R(, S)]; backward: grad_output [N, K, Ho(, Wo)], weight is input c.
      IIF(c.kind = 'conv', c.b0, c.a1) AS v_k,
      IIF(c.kind = 'conv', c.b1 * c.b2 * IIF(c.rb = 4, c.b3, 1), c.c1 * c.c2 * IIF(c.rc = 4, c.c3, 1)) AS v_crs,
      IIF(
        c.kind = 'conv',
        ((c.a2 + 2 * coalesce(json_extract(c.padding_t, '$[0]'), 0)
          - coalesce(json_extract(c.dilation_t, '$[0]'), 1) * (c.b2 - 1) - 1)
          / coalesce(json_extract(c.stride_t, '$[0]'), 1) + 1)
        * IIF(
          c.ra = 4,
          (c.a3 + 2 * coalesce(json_extract(c.padding_t, '$[1]'), json_extract(c.padding_t, '$[0]'), 0)
            - coalesce(json_extract(c.dilation_t, '$[1]'), json_extract(c.dilation_t, '$[0]'), 1) * (c.b3 - 1)
            - 1)
            / coalesce(json_extract(c.stride_t, '$[1]'), json_extract(c.stride_t, '$[0]'), 1) + 1,
          1),
        c.a2 * IIF(c.ra = 4, c.a3, 1)
      ) AS v_out,
      -- output_mask `[True, True, False]`: grad_input, grad_weight, grad_bias.
      IIF(c.kind = 'conv_bwd', IIF(c.padding_t GLOB '[[]True*', 1, 0), 1) AS v_gin,
      IIF(c.kind = 'conv_bwd', IIF(ltrim(substr(c.padding_t, instr(c.padding_t, ',') + 1)) GLOB 'True*', 1, 0), 0)
        AS v_gw
    FROM conv_args AS c
    WHERE
      coalesce(c.transposed_t, 'False') != 'True'
  ),
  -- Attention as (B*H, Lq, Lk, D, Dv, causal factor).
  attn AS (
    SELECT
      s.*,
      s.an / (s.al2 * s.al1) AS t_bh,
      s.al2 AS t_lq,
      s.bl2 AS t_lk,
      s.al1 AS t_d,
      coalesce(s.cl1, s.al1) AS t_dv,
      IIF(extract_arg(s.arg_set_id, 'args.Concrete Inputs[' || s.p_stride || ']') = 'True', 0.5, 1.0) AS t_causal
    FROM shaped AS s
    WHERE
      s.family = 'attention'
      AND s.ra >= 3
      AND s.rb >= 3
  ),
  modelled AS (
    SELECT
      id, name, family, precision, arg_set_id,
      'M=' || g_m || ' N=' || g_n || ' K=' || g_k || IIF(g_batch > 1, ' batch=' || g_batch, '') AS shape,
      2.0 * g_batch * g_m * g_n * g_k + IIF(g_bias > 0, 1.0 * g_batch * g_m * g_n, 0) AS flops,
      1.0 * es * (an + bn + g_batch * g_m * g_n + g_bias) AS bytes,
      0.0 AS exps
    FROM gemm
    WHERE
      g_batch IS NOT NULL AND g_m IS NOT NULL AND g_n IS NOT NULL AND g_k IS NOT NULL
    UNION ALL
    SELECT
      id, name, family, precision, arg_set_id,
      'N=' || a0 || ' K=' || v_k || ' out=' || v_out || ' CRS=' || v_crs
        || IIF(kind = 'conv_bwd', ' grads=' || (v_gin + v_gw), ''),
      2.0 * a0 * v_k * v_out * v_crs * IIF(kind = 'conv_bwd', v_gin + v_gw, 1),
      1.0 * es * IIF(
        kind = 'conv',
        an + bn + a0 * v_k * v_out + coalesce(cn, 0),
        an + bn + cn + v_gin * bn + v_gw * cn),
      0.0
    FROM conv
    WHERE
      v_out > 0
    UNION ALL
    SELECT
      id, name, family, precision, arg_set_id,
      'BH=' || t_bh || ' Lq=' || t_lq || ' Lk=' || t_lk || ' D=' || t_d || IIF(t_causal < 1, ' causal', ''),
      2.0 * t_bh * t_lq * t_lk * (t_d + t_dv) * t_causal * mult,
      1.0 * es * (an + bn + coalesce(cn, bn) + t_bh * t_lq * t_dv) * IIF(mult > 1, 2, 1),
      1.0 * t_bh * t_lq * t_lk * t_causal
    FROM attn
    UNION ALL
    SELECT
      id, name, family, precision, arg_set_id,
      '[' || a0 || coalesce(', ' || a1, '') || coalesce(', ' || a2, '') || coalesce(', ' || a3, '')
        || IIF(ra > 4, ', ...', '') || ']',
      1.0 * flops_per_elem * max(an, coalesce(bn, 0)),
      1.0 * es * an + coalesce(1.0 * bes * bn, 0) + coalesce(1.0 * ces * cn, 0)
        + writes_out * es * max(an, coalesce(bn, 0)),
      IIF(name IN ('aten::_softmax', 'aten::_log_softmax'), 1.0 * an, 0.0)
    FROM shaped
    WHERE
      kind = 'pointwise'
  )
SELECT
  id,
  name,
  family,
  shape,
  precision,
  coalesce(extract_arg(arg_set_id, 'args.flops'), flops) AS flops,
  bytes,
  exps,
  IIF(extract_arg(arg_set_id, 'args.flops') IS NOT NULL, 'kineto', 'model') AS flops_source
FROM modelled;
