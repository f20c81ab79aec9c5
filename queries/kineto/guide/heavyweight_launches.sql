-- id: guide.heavyweight_launches
-- version: 2
-- kind: guide
-- title: Heavyweight launches: occupancy queries before a kernel launch, and the kernels they precede
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Key CPU Lane Indicators: CUDA
--   Occupancy Queries / Resource-Light Kernels"
-- needs: gpu
-- status: stable

-- An occupancy query (class occupancy_query of kineto.lib.runtime_calls: cudaOccupancy*, cuOccupancy*,
-- hipOccupancy*; not the cudaFuncGetAttributes getter cuBLAS issues before every launch) is paired with the next launch on the same thread inside the same
-- op (the query's enclosing op is kineto_host_slices.op_id, the launch's kineto_launches.op_id): the kernel it precedes is heavyweight and adaptively launched
-- (GEMM, convolution). Memcpy / memset launches in between (split-K workspace clears) are skipped.
-- Elementwise and reduction kernels are launched without one.

INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;

-- One row per (launching op, kernel name) preceded by at least one occupancy query.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_heavyweight_launches()
RETURNS TABLE(
  -- The op the launches sit in, e.g. aten::addmm.
  op_name STRING,
  -- Kernel the occupancy query precedes.
  kernel STRING,
  -- Launches of this kernel from this op preceded by an occupancy query.
  queried_launches LONG,
  -- All launches of this kernel from this op.
  launches LONG,
  -- Summed duration of the occupancy queries, CPU.
  occupancy_dur DURATION,
  -- Summed device time of the queried kernels.
  kernel_dur DURATION,
  -- One sentence with the numbers.
  evidence STRING
) AS
WITH
  occ AS (
    SELECT
      r.id,
      r.ts,
      r.dur,
      r.utid,
      h.op_id
    FROM kineto_runtime_calls AS r
    JOIN kineto_host_slices AS h
      USING (id)
    WHERE
      r.class = 'occupancy_query'
  ),
  paired AS (
    SELECT
      o.id AS occ_id,
      o.dur AS occ_dur,
      o.op_id AS occ_op_id,
      (
        SELECT l.id
        FROM kineto_launches AS l
        WHERE
          l.utid = o.utid
          AND l.ts >= o.ts + o.dur
          AND l.gpu_count > 0
          AND EXISTS (
            SELECT 1
            FROM kineto_kernels AS k
            WHERE
              k.id = l.gpu_first_id
              AND k.kind = 'kernel'
          )
        ORDER BY l.ts
        LIMIT 1
      ) AS launch_id
    FROM occ AS o
  ),
  queried AS (
    SELECT
      l.id AS launch_id,
      l.op_name,
      k.name AS kernel,
      l.gpu_dur,
      sum(p.occ_dur) AS occ_dur
    FROM paired AS p
    JOIN kineto_launches AS l
      ON l.id = p.launch_id
    JOIN kineto_kernels AS k
      ON k.id = l.gpu_first_id
    WHERE
      l.op_id IS p.occ_op_id
    GROUP BY l.id
  ),
  all_launches AS (
    SELECT
      l.op_name,
      k.name AS kernel,
      count(*) AS launches
    FROM kineto_launches AS l
    JOIN kineto_kernels AS k
      ON k.id = l.gpu_first_id
    GROUP BY l.op_name, k.name
  ),
  grouped AS (
    SELECT
      q.op_name,
      q.kernel,
      count(*) AS queried_launches,
      sum(q.occ_dur) AS occupancy_dur,
      sum(q.gpu_dur) AS kernel_dur
    FROM queried AS q
    GROUP BY q.op_name, q.kernel
  )
SELECT
  g.op_name,
  g.kernel,
  g.queried_launches,
  a.launches,
  g.occupancy_dur,
  g.kernel_dur,
  printf(
    '%d of %d launches of %s from %s follow an occupancy query (%.1f us of queries, %.1f us of device time): heavyweight, adaptively launched kernel',
    g.queried_launches,
    a.launches,
    g.kernel,
    coalesce(g.op_name, 'no op'),
    g.occupancy_dur / 1e3,
    g.kernel_dur / 1e3
  ) AS evidence
FROM grouped AS g
JOIN all_launches AS a
  ON a.op_name IS g.op_name
  AND a.kernel = g.kernel
ORDER BY g.queried_launches DESC, g.kernel_dur DESC;
