-- id: guide.kernel_runtime_variance
-- version: 1
-- kind: guide
-- title: Kernel runtime variance: identical kernels (same name, grid and block) across steps
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Key GPU Lane Indicators: Runtime
--   Variance"
-- needs: gpu, steps
-- status: stable
-- default min_count: 3
-- default cv_threshold: 0.2

-- Groups device kernels launched inside steps by (name, grid, block, device); the coefficient of
-- variation (stddev / mean of the duration) shows run-to-run variance of identical work: clocks,
-- thermals, power management or driver housekeeping, or contention with a concurrent stream. Groups
-- must span at least two steps.

INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;

-- One row per identical-kernel group, most total device time first.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_kernel_runtime_variance(
  -- Groups with fewer launches are left out.
  min_count LONG,
  -- A coefficient of variation at or above this marks the group variable.
  cv_threshold DOUBLE
)
RETURNS TABLE(
  -- Kernel name.
  kernel STRING,
  -- Grid as `x,y,z`, or NULL when not recorded.
  grid STRING,
  -- Block as `x,y,z`, or NULL when not recorded.
  block STRING,
  -- Device index.
  device LONG,
  -- Launches in the group.
  count LONG,
  -- Distinct steps they ran in.
  steps LONG,
  -- Mean duration.
  mean_dur DURATION,
  -- Shortest.
  min_dur DURATION,
  -- Longest.
  max_dur DURATION,
  -- Population standard deviation of the duration, ns.
  stddev_ns DOUBLE,
  -- Coefficient of variation (stddev / mean).
  cv DOUBLE,
  -- True when cv >= cv_threshold.
  variable BOOL,
  -- One sentence with the numbers.
  evidence STRING
) AS
WITH
  k AS (
    SELECT
      k.name,
      k.dur,
      k.device,
      l.step,
      extract_arg(k.arg_set_id, 'args.grid[0]') || ',' || extract_arg(k.arg_set_id, 'args.grid[1]') || ','
      || extract_arg(k.arg_set_id, 'args.grid[2]') AS grid,
      extract_arg(k.arg_set_id, 'args.block[0]') || ',' || extract_arg(k.arg_set_id, 'args.block[1]') || ','
      || extract_arg(k.arg_set_id, 'args.block[2]') AS block
    FROM kineto_kernels AS k
    JOIN kineto_launches AS l
      ON l.correlation = k.correlation
    WHERE
      k.kind = 'kernel'
      AND l.step IS NOT NULL
  ),
  g AS (
    SELECT
      name,
      grid,
      block,
      device,
      count(*) AS n,
      count(DISTINCT step) AS steps,
      avg(dur) AS mean,
      min(dur) AS min_dur,
      max(dur) AS max_dur,
      sqrt(max(avg(1.0 * dur * dur) - avg(dur) * avg(dur), 0)) AS sd,
      sum(dur) AS total
    FROM k
    GROUP BY name, grid, block, device
  )
SELECT
  name AS kernel,
  grid,
  block,
  device,
  n AS count,
  steps,
  CAST(round(mean) AS INT) AS mean_dur,
  min_dur,
  max_dur,
  round(sd, 1) AS stddev_ns,
  CASE WHEN mean > 0 THEN round(sd / mean, 3) END AS cv,
  coalesce(sd / mean >= $cv_threshold, FALSE) AS variable,
  printf(
    '%d identical launches over %d steps: mean %.1f us, min %.1f us, max %.1f us, CV %.2f%s',
    n,
    steps,
    mean / 1e3,
    min_dur / 1e3,
    max_dur / 1e3,
    coalesce(sd / mean, 0),
    CASE
      WHEN sd / mean >= $cv_threshold THEN ' (variable: clocks, thermals, power management, driver housekeeping or contention)'
      ELSE ' (stable)'
    END
  ) AS evidence
FROM g
WHERE
  n >= $min_count
  AND steps >= 2
ORDER BY total DESC, kernel, grid, block;
