-- version: 2
-- locked: 2 812236a17509db35
-- lib: lib.cpu_ops@3 lib.dtypes@1 lib.event_categories@2 lib.host_slices@2 lib.host_tree@2 lib.steps@3

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

-- Per op with a model and its tensors: rank, the first four dims, last two dims, element count and
-- element size of input i (from `Input Dims[i][j]` / `Input type[i]`), built once from the args of
-- those ops only (one sorted GROUP BY, no per-row lookups).
CREATE OR REPLACE PERFETTO TABLE _kineto_op_inputs(
  -- cpu op slice id.
  op_id LONG,
  -- Input index.
  i LONG,
  -- Number of dims.
  rank LONG,
  -- Dim 0.
  d0 LONG,
  -- Dim 1.
  d1 LONG,
  -- Dim 2.
  d2 LONG,
  -- Dim 3.
  d3 LONG,
  -- Dim rank-1 (last).
  dl1 LONG,
  -- Dim rank-2.
  dl2 LONG,
  -- Elements.
  numel LONG,
  -- Bytes per element (NULL: not a tensor type we know).
  elem_bytes LONG,
  -- Precision class (bf16, fp16, fp32...).
  precision STRING
) AS
WITH
  ops AS (
    SELECT o.id, o.arg_set_id
    FROM kineto_cpu_ops AS o
    WHERE
      o.name IN (SELECT name FROM _kineto_op_models)
  ),
  raw AS (
    SELECT
      o.id AS op_id,
      o.arg_set_id,
      substr(a.key, 17) AS rest,
      a.int_value AS v
    FROM ops AS o
    JOIN args AS a
      ON a.arg_set_id = o.arg_set_id
    WHERE
      a.key GLOB 'args.Input Dims[[]*][[]*]'
  ),
  dims AS (
    SELECT
      op_id,
      arg_set_id,
      CAST(substr(rest, 1, instr(rest, ']') - 1) AS INT) AS i,
      CAST(substr(rest, instr(rest, '][') + 2, length(rest) - instr(rest, '][') - 2) AS INT) AS j,
      v
    FROM raw
  ),
  per_input AS (
    SELECT
      op_id,
      arg_set_id,
      i,
      count(*) AS rank,
      max(CASE WHEN j = 0 THEN v END) AS d0,
      max(CASE WHEN j = 1 THEN v END) AS d1,
      max(CASE WHEN j = 2 THEN v END) AS d2,
      max(CASE WHEN j = 3 THEN v END) AS d3,
      max(CASE WHEN j = 4 THEN v END) AS d4,
      max(CASE WHEN j = 5 THEN v END) AS d5,
      max(CASE WHEN j = 6 THEN v END) AS d6,
      max(CASE WHEN j = 7 THEN v END) AS d7
    FROM dims
    GROUP BY op_id, arg_set_id, i
  )
SELECT
  p.op_id,
  p.i,
  p.rank,
  p.d0,
  p.d1,
  p.d2,
  p.d3,
  CASE p.rank WHEN 1 THEN p.d0 WHEN 2 THEN p.d1 WHEN 3 THEN p.d2 WHEN 4 THEN p.d3 WHEN 5 THEN p.d4
    WHEN 6 THEN p.d5 WHEN 7 THEN p.d6 ELSE p.d7 END AS dl1,
  CASE p.rank WHEN 2 THEN p.d0 WHEN 3 THEN p.d1 WHEN 4 THEN p.d2 WHEN 5 THEN p.d3 WHEN 6 THEN p.d4
    WHEN 7 THEN p.d5 WHEN 8 THEN p.d6 END AS dl2,
  p.d0 * coalesce(p.d1, 1) * coalesce(p.d2, 1) * coalesce(p.d3, 1) * coalesce(p.d4, 1)
    * coalesce(p.d5, 1) * coalesce(p.d6, 1) * coalesce(p.d7, 1) AS numel,
  t.bytes AS elem_bytes,
  t.precision
FROM per_input AS p
LEFT JOIN kineto_dtypes AS t
  ON t.type = extract_arg(p.arg_set_id, 'args.Input type[' || p.i || ']')
WHERE
  p.rank <= 8;

-- The operand joins below look inputs up by (op, index).
CREATE OR REPLACE PERFETTO INDEX _kineto_op_inputs_op ON _kineto_op_inputs(op_id, i);

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
  -- model or kineto (the trace's own `flops` arg).
  flops_source STRING
) AS
WITH
  ops AS (
    SELECT
      o.id, o.name, o.arg_set_id, m.family, m.kind, m.a, m.b, m.c, m.p_stride, m.p_padding,
      m.p_dilation, m.p_transposed, m.mult, m.flops_per_elem, m.writes_out
    FROM kineto_cpu_ops AS o
    JOIN _kineto_op_models AS m
      USING (name)
  ),
  shaped AS (
    SELECT
      o.*,
      x.rank AS ra, x.d0 AS a0, x.d1 AS a1, x.d2 AS a2, x.d3 AS a3, x.dl1 AS al1, x.dl2 AS al2,
      x.numel AS an, x.elem_bytes AS es, x.precision,
      y.rank AS rb, y.d0 AS b0, y.d1 AS b1, y.d2 AS b2, y.d3 AS b3, y.dl1 AS bl1, y.dl2 AS bl2,
      y.numel AS bn, y.elem_bytes AS bes,
      z.rank AS rc, z.d0 AS c0, z.d1 AS c1, z.d2 AS c2, z.d3 AS c3, z.dl1 AS cl1,
      z.numel AS cn, z.elem_bytes AS ces
    FROM ops AS o
    JOIN _kineto_op_inputs AS x
      ON x.op_id = o.id AND x.i = o.a
    LEFT JOIN _kineto_op_inputs AS y
      ON y.op_id = o.id AND y.i = o.b
    LEFT JOIN _kineto_op_inputs AS z
      ON z.op_id = o.id AND z.i = o.c
    WHERE
      x.elem_bytes IS NOT NULL
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
      1.0 * es * (an + bn + g_batch * g_m * g_n + g_bias) AS bytes
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
        an + bn + cn + v_gin * bn + v_gw * cn)
    FROM conv
    WHERE
      v_out > 0
    UNION ALL
    SELECT
      id, name, family, precision, arg_set_id,
      'BH=' || t_bh || ' Lq=' || t_lq || ' Lk=' || t_lk || ' D=' || t_d || IIF(t_causal < 1, ' causal', ''),
      2.0 * t_bh * t_lq * t_lk * (t_d + t_dv) * t_causal * mult,
      1.0 * es * (an + bn + coalesce(cn, bn) + t_bh * t_lq * t_dv) * IIF(mult > 1, 2, 1)
    FROM attn
    UNION ALL
    SELECT
      id, name, family, precision, arg_set_id,
      '[' || a0 || coalesce(', ' || a1, '') || coalesce(', ' || a2, '') || coalesce(', ' || a3, '')
        || IIF(ra > 4, ', ...', '') || ']',
      1.0 * flops_per_elem * max(an, coalesce(bn, 0)),
      1.0 * es * an + coalesce(1.0 * bes * bn, 0) + coalesce(1.0 * ces * cn, 0)
        + writes_out * es * max(an, coalesce(bn, 0))
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
  IIF(extract_arg(arg_set_id, 'args.flops') IS NOT NULL, 'kineto', 'model') AS flops_source
FROM modelled;
