-- id: guide.addmm_bias_copy
-- version: 3
-- kind: guide
-- title: addmm bias copy: the copy that seeds the output with the bias before the GEMM (Memcpy DtoD before a GEMM)
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Dispatcher-Level Fusion" and
--   summary table "Memcpy DtoD before GEMM"
-- needs: cpu_ops
-- status: stable

-- torch.compile fuses matmul + add into one aten::addmm at the dispatcher level, not in a kernel: addmm
-- first copies the bias into the output (aten::copy_ under aten::addmm; on the GPU a Memcpy DtoD or a
-- copy kernel) and then runs the GEMM with a bias-add epilogue. One row per aten::addmm call that
-- copies; `compiled` says whether it ran inside a Torch-Compiled Region. Device columns are NULL in a
-- CPU-only trace.

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;

-- One row per aten::addmm with a bias copy.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_addmm_bias_copy()
RETURNS TABLE(
  -- Slice id of the aten::addmm.
  addmm_id LONG,
  -- Its start.
  ts TIMESTAMP,
  -- Its duration (CPU).
  dur DURATION,
  -- Step, or NULL.
  step LONG,
  -- True when a Torch-Compiled Region of the same process encloses it in time.
  compiled BOOL,
  -- CPU time of the aten::copy_ under it.
  copy_op_dur DURATION,
  -- Device copy activity launched from it (Memcpy DtoD or a copy kernel), or NULL.
  device_copy STRING,
  -- Its device time, or NULL.
  device_copy_dur DURATION,
  -- The GEMM kernel launched after it, or NULL.
  gemm_kernel STRING,
  -- Its device time, or NULL.
  gemm_dur DURATION,
  -- One sentence with the numbers.
  evidence STRING
) AS
WITH
  -- Compiled regions, once (a scan of every slice per addmm otherwise).
  regions AS MATERIALIZED (
    SELECT r.ts, r.dur, r.upid
    FROM kineto_thread_track_slices AS r
    WHERE
      r.name GLOB 'Torch-Compiled Region*'
  ),
  addmm AS (
    SELECT
      o.id,
      o.ts,
      o.dur,
      o.step,
      o.upid,
      o.utid,
      (
        SELECT sum(c.dur)
        FROM kineto_cpu_ops AS c
        WHERE
          c.parent_id = o.id
          AND c.name = 'aten::copy_'
      ) AS copy_op_dur
    FROM kineto_cpu_ops AS o
    WHERE
      o.name = 'aten::addmm'
  ),
  device AS (
    SELECT
      a.*,
      EXISTS (
        SELECT 1
        FROM regions AS r
        WHERE
          r.upid = a.upid
          AND r.ts <= a.ts
          AND r.ts + r.dur >= a.ts + a.dur
      ) AS compiled,
      (
        SELECT k.id
        FROM kineto_launches AS l
        JOIN kineto_kernels AS k
          ON k.correlation = l.correlation
        WHERE
          l.utid = a.utid
          AND l.ts >= a.ts
          AND l.ts < a.ts + a.dur
          AND (
            (k.kind = 'memcpy' AND k.name GLOB '*DtoD*')
            OR (k.kind = 'kernel' AND lower(k.name) GLOB '*copy*')
          )
        ORDER BY k.ts
        LIMIT 1
      ) AS copy_kernel_id
    FROM addmm AS a
  ),
  gemm AS (
    SELECT
      d.*,
      (
        SELECT k.id
        FROM kineto_launches AS l
        JOIN kineto_kernels AS k
          ON k.correlation = l.correlation
        WHERE
          l.utid = d.utid
          AND l.ts >= d.ts
          AND l.ts < d.ts + d.dur
          AND k.kind = 'kernel'
          AND NOT lower(k.name) GLOB '*copy*'
          AND k.id != d.copy_kernel_id
        ORDER BY k.ts DESC
        LIMIT 1
      ) AS gemm_id
    FROM device AS d
    WHERE
      d.copy_op_dur IS NOT NULL
      OR d.copy_kernel_id IS NOT NULL
  )
SELECT
  g.id AS addmm_id,
  g.ts,
  g.dur,
  g.step,
  g.compiled,
  g.copy_op_dur,
  ck.name AS device_copy,
  ck.dur AS device_copy_dur,
  gk.name AS gemm_kernel,
  gk.dur AS gemm_dur,
  printf(
    'aten::addmm%s copies the bias into its output first (aten::copy_ %.1f us on the CPU%s), then runs the GEMM%s: dispatcher-level fusion, not kernel fusion',
    CASE WHEN g.compiled THEN ' in a compiled region' ELSE '' END,
    coalesce(g.copy_op_dur, 0) / 1e3,
    CASE WHEN ck.name IS NOT NULL THEN printf('; device %s %.1f us', ck.name, ck.dur / 1e3) ELSE '' END,
    CASE WHEN gk.name IS NOT NULL THEN printf(' %s %.1f us', gk.name, gk.dur / 1e3) ELSE '' END
  ) AS evidence
FROM gemm AS g
LEFT JOIN kineto_kernels AS ck
  ON ck.id = g.copy_kernel_id
LEFT JOIN kineto_kernels AS gk
  ON gk.id = g.gemm_id
ORDER BY g.ts;
