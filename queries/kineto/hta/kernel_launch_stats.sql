-- id: hta.kernel_launch_stats
-- version: 4
-- kind: hta
-- title: CUDA kernel launch statistics: launch delay, short kernels, runtime and launch-delay outliers
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces; HolisticTraceAnalysis
--   (CudaKernelAnalysis.cuda_kernel_launch_stats)
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE
-- default runtime_cutoff: 50us
-- default launch_delay_cutoff: 100us

-- Per launch (runtime call joined to its GPU event by args.correlation): cpu = the call's duration,
-- gpu = the event's duration, launch delay = max(0, gpu start - call end). Short kernel: cpu <=
-- runtime_cutoff and gpu < cpu (the launch costs more than the work). Launch delay mixes launch
-- latency with queueing behind earlier work on the stream. cudaGraphLaunch is not counted.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

-- One summary row for the trace.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_kernel_launch_stats(
  -- TRUE = HTA 0.5.0's launch calls only (cudaLaunchKernel, cudaLaunchKernelExC, MTIA runFunction,
  -- cudaMemcpyAsync, cudaMemsetAsync), its event set (stream != -1, last ProfilerStep dropped); FALSE = also
  -- cuLaunchKernel/cuLaunchKernelEx (Triton) and the HIP launch calls, device work of the whole trace.
  hta_compat BOOL,
  -- A launch call longer than this is a runtime outlier; a kernel shorter than its launch call that took at
  -- most this long is a short kernel.
  runtime_cutoff DURATION,
  -- A launch delay above this is a launch-delay outlier.
  launch_delay_cutoff DURATION
)
RETURNS TABLE(
  -- Launches joined to a GPU event.
  launches LONG,
  -- Launches whose kernel ran shorter than the launch call (call <= runtime_cutoff).
  short_kernels LONG,
  -- Launch calls longer than runtime_cutoff.
  runtime_outliers LONG,
  -- Launches with launch delay above launch_delay_cutoff.
  launch_delay_outliers LONG,
  -- Sum of launch-call durations, us.
  cpu_sum_us DOUBLE,
  -- Sum of the launched events' durations, us.
  gpu_sum_us DOUBLE,
  -- Mean launch delay, us.
  launch_delay_mean_us DOUBLE,
  -- Median launch delay, us.
  launch_delay_p50_us DOUBLE,
  -- Longest launch delay, us.
  launch_delay_max_us DOUBLE
) AS
WITH calls AS MATERIALIZED (
  SELECT correlation, ts, dur
  FROM _kineto_hta_rows
  WHERE stream = -1
    AND correlation != -1
    AND IIF($hta_compat, hta_kept = 1, 1)
    AND name IN (
      SELECT n.name
      FROM _kineto_hta_launch_calls AS n
      WHERE
        n.launch_stats = 1
        OR (NOT $hta_compat AND n.launch_stats_extra = 1)
    )
),
-- Both sides materialized so that SQLite indexes one for the correlation join (a table function's
-- output has no index: a join on it is a nested loop).
gpu AS MATERIALIZED (
  SELECT correlation, ts, dur FROM _kineto_hta_events!($hta_compat)
),
pairs AS (
  SELECT
    c.dur / 1e3 AS cpu_us,
    g.dur / 1e3 AS gpu_us,
    MAX(g.ts - (c.ts + c.dur), 0) / 1e3 AS delay_us
  FROM calls c
  JOIN gpu g USING (correlation)
),
ranked AS (
  SELECT
    delay_us,
    ROW_NUMBER() OVER (ORDER BY delay_us) - 1 AS i,
    COUNT(*) OVER () AS n
  FROM pairs
),
median AS (
  SELECT AVG(delay_us) AS p50
  FROM ranked
  WHERE i IN (CAST((n - 1) / 2 AS INT), CAST(n / 2 AS INT))
)
SELECT
  COUNT(*) AS launches,
  SUM(IIF(cpu_us <= $runtime_cutoff / 1e3 AND gpu_us < cpu_us, 1, 0)) AS short_kernels,
  SUM(IIF(cpu_us > $runtime_cutoff / 1e3, 1, 0)) AS runtime_outliers,
  SUM(IIF(delay_us > $launch_delay_cutoff / 1e3, 1, 0)) AS launch_delay_outliers,
  SUM(cpu_us) AS cpu_sum_us,
  SUM(gpu_us) AS gpu_sum_us,
  AVG(delay_us) AS launch_delay_mean_us,
  (SELECT p50 FROM median) AS launch_delay_p50_us,
  MAX(delay_us) AS launch_delay_max_us
FROM pairs
HAVING COUNT(*) > 0;
