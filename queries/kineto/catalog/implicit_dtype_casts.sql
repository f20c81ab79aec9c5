-- id: catalog.implicit_dtype_casts
-- version: 1
-- kind: detector
-- title: Implicit dtype casts: fp32 GEMMs and the casts feeding them in an otherwise bf16/fp16 run
-- source: seed 000 section 3, major fault "Implicit dtype casts"; seed section 5 exercise 4 (cast hunt)
-- signature: aten::to / aten::_to_copy / aten::copy_ casts bracketing matmuls; fp32 GEMMs in a bf16 or
--   fp16 run (record_shapes `Input type`), their kernels without tensor-core tags.
-- confirming: per step, fp32 GEMM ops next to low-precision GEMM ops (dtype from record_shapes), the
--   up-casts (low precision -> float) that feed them, and the fp32 GEMM kernels lacking tensor-core names.
-- cost: an fp32 GEMM in a bf16/fp16 run runs without tensor cores (several times slower) and the casts around
--   it add copies and kernels. impact_dur is the fp32 GEMM time plus the up-cast time.
-- false_positives: a layer kept in fp32 on purpose (loss, norm statistics, a final projection for stability)
--   looks the same.
-- example: fp32_gemm_in_bf16_run
-- fix: fix the autocast scope (no autocast(enabled=False) islands, no .float() inside the region); keep
--   master-weight casts out of the hot loop; cast once, outside the step.
-- needs: steps, cpu_ops
-- status: stable
-- catalog_row: major.implicit_dtype_casts
-- default min_fp32_gemms: 1
-- locked: 1 e5f1382e7e519cca
-- lib: lib.cpu_ops@1 lib.event_categories@1 lib.host_tree@1 lib.kernels@1 lib.launches@1 lib.steps@1
-- cases: fp32_gemm_in_bf16_run=24d5b547 pure_fp32_run_is_silent=7c9f5379

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;

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
  -- Step.
  step LONG,
  -- `float`, `c10::BFloat16`, `c10::Half`, ...
  dtype STRING
) AS
SELECT
  o.id,
  o.ts,
  o.dur,
  o.name,
  o.step,
  CASE
    WHEN o.name IN ('aten::addmm', 'aten::baddbmm', 'aten::addbmm') THEN extract_arg(o.arg_set_id, 'args.Input type[1]')
    ELSE extract_arg(o.arg_set_id, 'args.Input type[0]')
  END AS dtype
FROM kineto_cpu_ops AS o
WHERE
  o.name IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm', 'aten::addbmm')
  AND o.step IS NOT NULL;

-- One row per step running fp32 GEMMs next to bf16/fp16 ones.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_implicit_dtype_casts(
  -- A step fires with at least this many fp32 GEMMs (when it also runs bf16/fp16 GEMMs: a pure fp32 run is a
  -- choice, not a cast leak)
  min_fp32_gemms LONG
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
  no_tensor_core_kernel_count LONG
) AS
WITH
  g AS (
    SELECT
      step,
      sum(dtype = 'float') AS fp32_n,
      sum(dtype IN ('c10::BFloat16', 'c10::Half')) AS low_n,
      max(CASE WHEN dtype IN ('c10::BFloat16', 'c10::Half') THEN dtype END) AS low_dtype,
      min(CASE WHEN dtype = 'float' THEN ts END) AS ts,
      max(CASE WHEN dtype = 'float' THEN ts + dur END) AS end_ts,
      sum(CASE WHEN dtype = 'float' THEN dur ELSE 0 END) AS fp32_dur
    FROM _kineto_catalog_gemm_dtypes
    GROUP BY step
  ),
  casts AS (
    SELECT o.step, count(*) AS n, sum(o.dur) AS d
    FROM kineto_cpu_ops AS o
    WHERE
      o.step IS NOT NULL
      AND (
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
    GROUP BY o.step
  ),
  kern AS (
    SELECT
      d.step,
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
    GROUP BY d.step
  ),
  has_gpu AS (
    SELECT EXISTS (SELECT 1 FROM kineto_kernels) AS yes
  )
SELECT
  g.ts,
  g.end_ts - g.ts AS dur,
  g.fp32_dur + coalesce(c.d, 0) AS impact_dur,
  g.step,
  printf(
    'Step %d runs %d fp32 GEMMs next to %d %s GEMMs, fed by %d up-casts to float (%.3f ms of casts, %.3f ms of fp32 GEMM)%s.',
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
  CASE WHEN (SELECT yes FROM has_gpu) THEN coalesce(k.no_tc, 0) END AS no_tensor_core_kernel_count
FROM g
LEFT JOIN casts AS c
  USING (step)
LEFT JOIN kern AS k
  USING (step)
WHERE
  g.fp32_n >= $min_fp32_gemms
  AND g.low_n >= 1
ORDER BY g.ts;
