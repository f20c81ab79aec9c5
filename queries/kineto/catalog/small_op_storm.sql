-- id: catalog.small_op_storm
-- version: 3
-- kind: detector
-- title: Eager small-op storm: hundreds of tiny ATen ops per step, the host launching as fast as it can
-- source: seed 000 section 3, major fault "Eager small-op storm"
-- signature: hundreds of sub-50 us ATen ops per step (elementwise chains, norm internals); the CPU op row
--   is denser than the GPU row, with gaps between kernels.
-- confirming: ops per step; CPU launch time close to GPU busy time (launch-bound); median kernel
--   duration and the fraction of kernels under 10 us.
-- cost: each tiny op costs host dispatch and a launch (several us) for a kernel that runs for less: the host,
--   not the device, sets the pace and the GPU idles between kernels (impact_dur: step width minus GPU busy).
-- false_positives: a step whose GPU is busy anyway stays silent (max_gpu_busy_pct); a CPU-only trainer of a
--   small model fires because its many small ops are genuine CPU work, not launch overhead.
-- example: at_threshold_1
-- fix: torch.compile (fusion), fused optimizers and fused norms/activations, larger per-op work (batch
--   or fuse small tensors), CUDA graphs for a fixed-shape step.
-- needs: steps, cpu_ops
-- status: stable
-- catalog_row: major.eager_small_op_storm
-- default max_op: 50us
-- default min_small_ops: 1000
-- default min_launch_ratio: 0.5
-- default max_gpu_busy_pct: 80
-- default min_cpu_self_pct: 10
-- locked: 3 8ddcae65f7ebdd91
-- lib: lib.cpu_ops@2 lib.device_busy@1 lib.event_categories@1 lib.host_slices@1 lib.host_tree@1 lib.kernels@2
--   lib.launches@2 lib.steps@3 lib.stream_busy@1
-- cases: at_threshold_1=efec92ec at_threshold_2=a904a466 compute_bound_gpu_is_silent=4dba9e0d

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.device_busy;

-- One row per step with a small-op storm.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_small_op_storm(
  -- An ATen op shorter than this is small (seed: sub-50 us).
  max_op DURATION,
  -- A step fires with at least this many small ops, nested ATen calls included (seed: hundreds of
  -- python-level ops per step, each dispatching ~3-4 ATen events; the golden eager storm has 1391 vs 25
  -- compiled, plain small-MLP training steps 350-650)
  min_small_ops LONG,
  -- With GPU work, the step fires only when the host time spent in launch calls is at least this fraction of
  -- the GPU busy time (seed: CPU launch time ~ GPU busy time); a compute-bound step (GPU busy far above
  -- launch time) stays silent.
  min_launch_ratio DOUBLE,
  -- With GPU work, a step whose GPU is busy above this % of its width is compute-bound, not starved (launch
  -- calls then block on a full queue and look long), and stays silent.
  max_gpu_busy_pct DOUBLE,
  -- Without GPU work, the small ops' self time must be at least this % of the step (golden eager storm 25-43
  -- %; a CPU trainer whose step is dominated by big ops stays silent)
  min_cpu_self_pct DOUBLE
)
RETURNS TABLE(
  -- Step start.
  ts TIMESTAMP,
  -- Step width.
  dur DURATION,
  -- Step time lost: step width minus GPU busy (GPU traces), else the small ops' summed self time.
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- ATen ops (not annotations) in the step.
  op_count LONG,
  -- Of them shorter than max_op.
  small_op_count LONG,
  -- Summed self time of the small ops.
  small_op_self_dur DURATION,
  -- Kernels launched from the step (NULL without GPU work).
  kernel_count LONG,
  -- Median kernel duration (NULL without GPU work).
  median_kernel_dur DURATION,
  -- Fraction of kernels under 10 us (NULL without GPU work).
  under_10us_fraction DOUBLE,
  -- Host time in launch calls during the step.
  launch_dur DURATION,
  -- Device busy time inside the step window (NULL without GPU work).
  gpu_busy_dur DURATION
) AS
WITH
  ops AS (
    SELECT
      o.step,
      count(*) AS op_count,
      sum(o.dur < $max_op) AS small_op_count,
      sum(CASE WHEN o.dur < $max_op THEN max(o.self_dur, 0) ELSE 0 END) AS small_op_self_dur
    FROM kineto_cpu_ops AS o
    WHERE
      NOT o.is_annotation
      AND o.step IS NOT NULL
    GROUP BY o.step
  ),
  step_kernels AS (
    SELECT
      l.step,
      k.dur,
      row_number() OVER (PARTITION BY l.step ORDER BY k.dur) AS rn,
      count(*) OVER (PARTITION BY l.step) AS n
    FROM kineto_kernels AS k
    JOIN kineto_launches AS l
      ON l.correlation = k.correlation
    WHERE
      k.kind = 'kernel'
      AND l.step IS NOT NULL
  ),
  kstats AS (
    SELECT
      step,
      max(n) AS kernel_count,
      max(CASE WHEN rn = (n + 1) / 2 THEN dur END) AS median_kernel_dur,
      avg(dur < 10000) AS under_10us_fraction
    FROM step_kernels
    GROUP BY step
  ),
  launch AS (
    SELECT step, sum(dur) AS launch_dur
    FROM kineto_launches
    WHERE
      step IS NOT NULL
    GROUP BY step
  ),
  busy AS (
    SELECT
      st.step,
      (
        SELECT sum(min(b.ts + b.dur, st.ts + st.dur) - max(b.ts, st.ts))
        FROM kineto_device_busy AS b
        WHERE
          b.ts < st.ts + st.dur
          AND b.ts + b.dur > st.ts
      ) AS gpu_busy_dur
    FROM kineto_steps AS st
  ),
  has_gpu AS (
    SELECT EXISTS (SELECT 1 FROM kineto_kernels) AS yes
  ),
  joined AS (
    SELECT
      st.ts,
      st.dur,
      st.step,
      o.op_count,
      o.small_op_count,
      o.small_op_self_dur,
      ks.kernel_count,
      ks.median_kernel_dur,
      ks.under_10us_fraction,
      coalesce(la.launch_dur, 0) AS launch_dur,
      CASE WHEN (SELECT yes FROM has_gpu) THEN coalesce(b.gpu_busy_dur, 0) END AS gpu_busy_dur
    FROM kineto_steps AS st
    JOIN ops AS o
      USING (step)
    LEFT JOIN kstats AS ks
      USING (step)
    LEFT JOIN launch AS la
      USING (step)
    LEFT JOIN busy AS b
      USING (step)
  )
SELECT
  j.ts,
  j.dur,
  CASE WHEN j.gpu_busy_dur IS NULL THEN j.small_op_self_dur ELSE max(j.dur - j.gpu_busy_dur, 0) END AS impact_dur,
  j.step,
  printf(
    'Step %d runs %d ATen ops, %d of them under %.0f us%s.',
    j.step,
    j.op_count,
    j.small_op_count,
    $max_op / 1e3,
    CASE
      WHEN j.gpu_busy_dur IS NULL THEN printf(' (%.3f ms of small-op self time in a %.3f ms step; CPU-only capture)', j.small_op_self_dur / 1e6, j.dur / 1e6)
      ELSE printf(
        '; %d kernels, median %.1f us, %.0f%% under 10 us; launch calls %.3f ms vs GPU busy %.3f ms (%.0f%% of the step)',
        coalesce(j.kernel_count, 0),
        coalesce(j.median_kernel_dur, 0) / 1e3,
        100.0 * coalesce(j.under_10us_fraction, 0),
        j.launch_dur / 1e6,
        j.gpu_busy_dur / 1e6,
        100.0 * j.gpu_busy_dur / max(j.dur, 1)
      )
    END
  ) AS evidence,
  j.op_count,
  j.small_op_count,
  j.small_op_self_dur,
  j.kernel_count,
  j.median_kernel_dur,
  j.under_10us_fraction,
  j.launch_dur,
  j.gpu_busy_dur
FROM joined AS j
WHERE
  j.small_op_count >= $min_small_ops
  AND (
    (j.gpu_busy_dur IS NULL AND 100.0 * j.small_op_self_dur / max(j.dur, 1) >= $min_cpu_self_pct)
    OR (
      j.launch_dur >= $min_launch_ratio * j.gpu_busy_dur
      AND 100.0 * j.gpu_busy_dur / max(j.dur, 1) <= $max_gpu_busy_pct
    )
  )
ORDER BY j.ts;
