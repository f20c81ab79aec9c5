-- id: catalog.implicit_dtype_casts
-- version: 3
-- kind: detector
-- title: Implicit dtype casts: fp32 GEMMs and the casts feeding them in a bf16/fp16 run; float64 tensors cast every step
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Implicit dtype casts";
--   Exercises, 4 (cast hunt)
-- what: aten::to / aten::_to_copy / aten::copy_ casts bracketing matmuls; fp32 GEMMs in a bf16 or
--   fp16 run (record_shapes `Input type`), their kernels without tensor-core tags; in any run (fp32
--   included) a float64 tensor cast down to float32 / bf16 / fp16 inside the step (aten::copy_ from
--   `double`, a source of at least one dimension).
-- confirming: per step, fp32 GEMM ops next to low-precision GEMM ops (dtype from record_shapes), the
--   up-casts (low precision -> float) that feed them, and the fp32 GEMM kernels lacking tensor-core names;
--   per step the float64 casts and their time (`cause` says which of the two a row is).
-- why: an fp32 GEMM in a bf16/fp16 run runs without tensor cores (several times slower) and the casts around
--   it add copies and kernels. impact_dur is the fp32 GEMM time plus the up-cast time. A float64 tensor
--   in a float32 model (numpy's default dtype, torch.tensor on Python floats, set_default_dtype) is cast
--   back every step, and whatever runs on it before the cast runs in float64, 1/2 to 1/64 of the fp32 rate
--   on GPUs; impact_dur of such a row is the cast time (what the leak costs at least).
-- known_problems: a layer kept in fp32 on purpose (loss, norm statistics, a final projection for stability)
--   looks the same. Python scalars (`x * 0.5`) are wrapped as 0-dim double tensors and cast inside the op:
--   a source without dimensions is not counted; nor are promotions up to float64 (float64 metric states).
--   A float64 tensor cast down on purpose (a float64 reference computation) fires too.
-- example: fp32_gemm_in_bf16_run
-- use_instead: (rows carry the fix for their cause) fix the autocast scope (no autocast(enabled=False) islands, no .float() inside the region); keep
--   master-weight casts out of the hot loop; cast once, outside the step.
-- needs: cpu_ops
-- claims: busy.gemm, busy.elementwise, host.ops
-- status: stable
-- catalog_row: major.implicit_dtype_casts
-- default min_fp32_gemms: 1
-- default min_f64_casts: 1

INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;

-- The ops this rule reads (GEMMs and the copies that cast), each in its iteration window (kineto.lib.
-- iterations: ProfilerStep#N, else inferred iterations, else the capture): no ProfilerStep needed.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_implicit_dtype_casts_windowed(
  -- Op slice id.
  id JOINID(slice.id),
  -- Its window (kineto_iterations.id).
  window_id LONG,
  -- The window's iteration number.
  step LONG
) AS
SELECT w.id, w.window_id, w.step
FROM kineto_window_of!((
  SELECT o.id, o.upid, o.ts
  FROM kineto_cpu_ops AS o
  WHERE
    o.name IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm', 'aten::addbmm', 'aten::_to_copy', 'aten::copy_')
)) AS w
ORDER BY w.id;

-- GEMM ops with the dtype of their matrix operand (record_shapes `Input type`).
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_gemm_dtypes(
  -- Op slice id.
  id JOINID(slice.id),
  -- Op start.
  ts TIMESTAMP,
  -- Op duration.
  dur DURATION,
  -- Op name.
  name STRING,
  -- Window (kineto_iterations.id).
  window_id LONG,
  -- The window's iteration number.
  step LONG,
  -- `float`, `c10::BFloat16`, `c10::Half`, ...
  dtype STRING
) AS
SELECT
  o.id,
  o.ts,
  o.dur,
  o.name,
  w.window_id,
  w.step,
  CASE
    WHEN o.name IN ('aten::addmm', 'aten::baddbmm', 'aten::addbmm') THEN extract_arg(o.arg_set_id, 'args.Input type[1]')
    ELSE extract_arg(o.arg_set_id, 'args.Input type[0]')
  END AS dtype
FROM kineto_cpu_ops AS o
JOIN _kineto_catalog_implicit_dtype_casts_windowed AS w
  USING (id)
WHERE
  o.name IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm', 'aten::addbmm');

-- One row per step and cause: fp32 GEMMs next to bf16/fp16 ones; float64 tensors cast inside the step.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_implicit_dtype_casts(
  -- A step fires with at least this many fp32 GEMMs (when it also runs bf16/fp16 GEMMs: a pure fp32 run is a
  -- choice, not a cast leak)
  min_fp32_gemms LONG,
  -- A step fires with at least this many float64 -> float32/bf16/fp16 casts of tensors (any run: one
  -- float64 tensor per step is a leak an expert removes, whatever the model's dtype)
  min_f64_casts LONG
)
RETURNS TABLE(
  -- First fp32 GEMM start.
  ts TIMESTAMP,
  -- From the first to the end of the last fp32 GEMM.
  dur DURATION,
  -- Step time at stake: the fp32 GEMM time plus the up-cast time (what autocast would have run in
  -- low precision or not at all).
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- fp32 GEMM ops.
  fp32_gemm_count LONG,
  -- bf16 / fp16 GEMM ops.
  low_precision_gemm_count LONG,
  -- The low-precision dtype seen.
  low_precision_dtype STRING,
  -- Up-casts (aten::_to_copy / aten::copy_ from bf16/fp16 into float) in the step.
  upcast_count LONG,
  -- Their summed time.
  upcast_dur DURATION,
  -- fp32 GEMM time.
  fp32_gemm_dur DURATION,
  -- Kernels launched by the fp32 GEMMs (NULL without GPU work).
  fp32_kernel_count LONG,
  -- Of them, kernels whose names carry no tensor-core tag (NULL without GPU work).
  no_tensor_core_kernel_count LONG,
  -- fp32_gemm_in_low_precision_run or float64_casts.
  cause STRING,
  -- float64 -> float32/bf16/fp16 casts of tensors in the step.
  f64_cast_count LONG,
  -- Their summed time (aten::copy_, where the cast happens).
  f64_cast_dur DURATION,
  -- The fix for this cause.
  fix STRING
) AS
WITH
  windows AS (
    SELECT window_id, noun FROM kineto_ledger_claim('busy.gemm, busy.elementwise, host.ops')
  ),
  g AS (
    SELECT
      window_id,
      max(step) AS step,
      sum(dtype = 'float') AS fp32_n,
      sum(dtype IN ('c10::BFloat16', 'c10::Half')) AS low_n,
      max(CASE WHEN dtype IN ('c10::BFloat16', 'c10::Half') THEN dtype END) AS low_dtype,
      min(CASE WHEN dtype = 'float' THEN ts END) AS ts,
      max(CASE WHEN dtype = 'float' THEN ts + dur END) AS end_ts,
      sum(CASE WHEN dtype = 'float' THEN dur ELSE 0 END) AS fp32_dur
    FROM _kineto_catalog_gemm_dtypes
    GROUP BY window_id
  ),
  casts AS (
    SELECT w.window_id, count(*) AS n, sum(o.dur) AS d
    FROM kineto_cpu_ops AS o
    JOIN _kineto_catalog_implicit_dtype_casts_windowed AS w
      USING (id)
    WHERE
      (
        (o.name = 'aten::_to_copy' AND extract_arg(o.arg_set_id, 'args.Input type[0]') IN ('c10::BFloat16', 'c10::Half'))
        OR (
          o.name = 'aten::copy_'
          AND extract_arg(o.arg_set_id, 'args.Input type[0]') = 'float'
          AND extract_arg(o.arg_set_id, 'args.Input type[1]') IN ('c10::BFloat16', 'c10::Half')
        )
      )
      AND NOT EXISTS (
        SELECT 1 FROM kineto_cpu_ops AS p WHERE p.id = o.parent_id AND p.name = 'aten::_to_copy'
      )
    GROUP BY w.window_id
  ),
  kern AS (
    SELECT
      d.window_id,
      count(k.id) AS n,
      sum(
        NOT (
          lower(k.name) GLOB '*tensorop*' OR lower(k.name) GLOB '*hmma*' OR lower(k.name) GLOB '*xmma*'
          OR lower(k.name) GLOB '*wgmma*' OR lower(k.name) GLOB '*bf16*' OR lower(k.name) GLOB '*f16*'
          OR lower(k.name) GLOB '*h884*' OR lower(k.name) GLOB '*h1688*' OR lower(k.name) GLOB '*16816*'
          OR lower(k.name) GLOB '*tf32*' OR lower(k.name) GLOB '*mfma*'
        )
      ) AS no_tc
    FROM _kineto_catalog_gemm_dtypes AS d
    JOIN kineto_launches AS l
      ON l.ts >= d.ts
      AND l.ts < d.ts + d.dur
      AND l.op_id IN (SELECT id FROM descendant_slice(d.id) UNION ALL SELECT d.id)
    JOIN kineto_kernels AS k
      ON k.correlation = l.correlation
    WHERE
      d.dtype = 'float'
    GROUP BY d.window_id
  ),
  has_gpu AS (
    SELECT EXISTS (SELECT 1 FROM kineto_kernels) AS yes
  ),
  -- The cast itself is an aten::copy_ (under aten::to / aten::_to_copy, or a direct .copy_()): Input
  -- type [0] is the destination, [1] the source. A 0-dim source (no `Input Dims[1][0]`) is a Python
  -- scalar wrapped as a double and is left out. Only casts down from float64 count: a float64 tensor
  -- feeding a float32 model. Promotions up to float64 (a metric accumulating into a float64 state, as
  -- TorchRec's RecMetrics do, or a .double() for a numerically delicate reduction) are deliberate.
  f64 AS (
    SELECT w.window_id, max(w.step) AS step, min(o.ts) AS ts, max(o.ts + o.dur) AS end_ts, count(*) AS n, sum(o.dur) AS d
    FROM kineto_cpu_ops AS o
    JOIN _kineto_catalog_implicit_dtype_casts_windowed AS w
      USING (id)
    WHERE
      o.name = 'aten::copy_'
      AND extract_arg(o.arg_set_id, 'args.Input Dims[1][0]') IS NOT NULL
      AND extract_arg(o.arg_set_id, 'args.Input type[1]') = 'double'
      AND extract_arg(o.arg_set_id, 'args.Input type[0]') IN ('float', 'c10::BFloat16', 'c10::Half')
    GROUP BY w.window_id
  ),
  mixed_rows AS (
    SELECT
      g.ts,
      g.end_ts - g.ts AS dur,
      g.fp32_dur + coalesce(c.d, 0) AS impact_dur,
      g.step,
      printf(
        '%s %d runs %d fp32 GEMMs next to %d %s GEMMs, fed by %d up-casts to float (%.3f ms of casts, %.3f ms of fp32 GEMM)%s.',
        coalesce(wn.noun, 'Step'),
        g.step,
        g.fp32_n,
        g.low_n,
        g.low_dtype,
        coalesce(c.n, 0),
        coalesce(c.d, 0) / 1e6,
        g.fp32_dur / 1e6,
        CASE
          WHEN k.n IS NULL THEN ''
          ELSE printf('; %d of their %d kernels carry no tensor-core tag', k.no_tc, k.n)
        END
      ) AS evidence,
      g.fp32_n AS fp32_gemm_count,
      g.low_n AS low_precision_gemm_count,
      g.low_dtype AS low_precision_dtype,
      coalesce(c.n, 0) AS upcast_count,
      coalesce(c.d, 0) AS upcast_dur,
      g.fp32_dur AS fp32_gemm_dur,
      CASE WHEN (SELECT yes FROM has_gpu) THEN coalesce(k.n, 0) END AS fp32_kernel_count,
      CASE WHEN (SELECT yes FROM has_gpu) THEN coalesce(k.no_tc, 0) END AS no_tensor_core_kernel_count,
      'fp32_gemm_in_low_precision_run' AS cause,
      0 AS f64_cast_count,
      0 AS f64_cast_dur,
      'Fix the autocast scope (no autocast(enabled=False) islands, no .float() inside the region); keep master-weight casts out of the hot loop; cast once, outside the step.' AS fix
    FROM g
    LEFT JOIN windows AS wn
      USING (window_id)
    LEFT JOIN casts AS c
      USING (window_id)
    LEFT JOIN kern AS k
      USING (window_id)
    WHERE
      g.fp32_n >= $min_fp32_gemms
      AND g.low_n >= 1
  ),
  f64_rows AS (
    SELECT
      f.ts,
      f.end_ts - f.ts AS dur,
      f.d AS impact_dur,
      f.step,
      printf(
        '%s %d casts float64 tensors %d times (%.3f ms in aten::copy_): a float64 tensor enters the step and is converted every iteration, and whatever ran on it before ran in float64.',
        coalesce(wn.noun, 'Step'), f.step, f.n, f.d / 1e6
      ) AS evidence,
      0 AS fp32_gemm_count,
      0 AS low_precision_gemm_count,
      NULL AS low_precision_dtype,
      0 AS upcast_count,
      0 AS upcast_dur,
      0 AS fp32_gemm_dur,
      NULL AS fp32_kernel_count,
      NULL AS no_tensor_core_kernel_count,
      'float64_casts' AS cause,
      f.n AS f64_cast_count,
      f.d AS f64_cast_dur,
      'Create the tensor as float32 where it is made: np.float32 arrays (numpy defaults to float64), torch.tensor(..., dtype=torch.float32) or torch.from_numpy(a.astype(np.float32)) once outside the loop, no torch.set_default_dtype(torch.float64); on a GPU float64 math runs at 1/2 to 1/64 of the fp32 rate.' AS fix
    FROM f64 AS f
    LEFT JOIN windows AS wn
      USING (window_id)
    WHERE
      f.n >= $min_f64_casts
  )
SELECT
  ts,
  dur,
  impact_dur,
  step,
  evidence,
  fp32_gemm_count,
  low_precision_gemm_count,
  low_precision_dtype,
  upcast_count,
  upcast_dur,
  fp32_gemm_dur,
  fp32_kernel_count,
  no_tensor_core_kernel_count,
  cause,
  f64_cast_count,
  f64_cast_dur,
  fix
FROM (
  SELECT * FROM mixed_rows
  UNION ALL
  SELECT * FROM f64_rows
)
ORDER BY ts, cause;
