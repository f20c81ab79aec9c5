-- id: hta.idle_time_breakdown
-- version: 4
-- kind: hta
-- title: Idle-time breakdown per stream: host wait, kernel wait and other, with interval statistics
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces (HTA idle-time
--   attribution); HolisticTraceAnalysis
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE
-- default consecutive_kernel_delay: 30us

-- Per stream, events (kernel, memcpy, memset) in start order: the gap before each event is
--   host_wait   when its launching runtime call started after the previous event on the stream ended
--               (the CPU did not enqueue fast enough),
--   kernel_wait when not host wait and the gap is below consecutive_kernel_delay,
--   other       otherwise (for example waiting on another stream).
-- The first event of a stream has no gap. This is per-stream idle, not GPU idle: summed over streams
-- it can exceed the temporal breakdown's idle time. Statistics are HTA's describe(): count, mean,
-- sample std, min, linear-interpolated quartiles, max.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

-- One row per (stream, idle category) that has at least one gap.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_idle_time_breakdown(
  -- TRUE = HTA 0.5.0's event set (the last ProfilerStep and the GPU work it launched dropped when there are
  -- 2+ steps); FALSE = the whole trace.
  hta_compat BOOL,
  -- A gap shorter than this that is not host wait is kernel wait (HTA's consecutive_kernel_delay, 30 us; its
  -- docs say ns but it compares trace units, i.e. us).
  consecutive_kernel_delay DURATION
)
RETURNS TABLE(
  -- CUDA stream.
  stream LONG,
  -- host_wait, kernel_wait or other.
  idle_category STRING,
  -- Sum of the gaps of this category, us.
  idle_us DOUBLE,
  -- Share of this stream's idle time, 0..1.
  idle_ratio DOUBLE,
  -- Number of gaps.
  count LONG,
  -- Mean gap, us.
  mean_us DOUBLE,
  -- Sample standard deviation of the gaps, us (NULL for one gap).
  std_us DOUBLE,
  -- Shortest gap, us.
  min_us DOUBLE,
  -- 25th percentile gap, us.
  p25_us DOUBLE,
  -- Median gap, us.
  p50_us DOUBLE,
  -- 75th percentile gap, us.
  p75_us DOUBLE,
  -- Longest gap, us.
  max_us DOUBLE
) AS
-- Each event with its launching runtime call's start: the latest CPU-side row with its correlation (a
-- join on the indexed correlation, grouped in case several rows carry it).
WITH ev AS (
  SELECT e.id, e.stream, e.ts, e.end_ts, MAX(h.ts) AS runtime_ts
  FROM _kineto_hta_events!($hta_compat) e
  LEFT JOIN _kineto_hta_host_rows h USING (correlation)
  WHERE e.is_device_op = 1 AND e.stream != -1
  GROUP BY e.id
),
gaps AS (
  SELECT
    stream,
    ts,
    runtime_ts,
    LAG(end_ts) OVER (PARTITION BY stream ORDER BY ts, id) AS prev_end
  FROM ev
),
classified AS (
  SELECT
    stream,
    (ts - prev_end) / 1e3 AS gap_us,
    CASE
      WHEN runtime_ts > prev_end THEN 'host_wait'
      WHEN (ts - prev_end) < $consecutive_kernel_delay THEN 'kernel_wait'
      ELSE 'other'
    END AS idle_category
  FROM gaps
  WHERE prev_end IS NOT NULL
),
ranked AS MATERIALIZED (
  SELECT
    stream, idle_category, gap_us,
    ROW_NUMBER() OVER (PARTITION BY stream, idle_category ORDER BY gap_us) - 1 AS i
  FROM classified
),
-- Count and mean per (stream, category) by a grouped pass (a whole-partition window frame costs a
-- second pass over every gap).
stats AS (
  SELECT stream, idle_category, COUNT(*) AS n, AVG(gap_us) AS mean
  FROM ranked
  GROUP BY stream, idle_category
),
quart AS (
  SELECT
    stream, idle_category, n, mean,
    SUM(gap_us) AS total,
    MIN(gap_us) AS min_v,
    MAX(gap_us) AS max_v,
    IIF(n > 1, SQRT(SUM((gap_us - mean) * (gap_us - mean)) / (n - 1)), NULL) AS std,
    -- pandas' linear interpolation: value at rank q*(n-1).
    MAX(IIF(i = CAST(0.25 * (n - 1) AS INT), gap_us, NULL)) AS q25_lo,
    MAX(IIF(i = CAST(0.25 * (n - 1) AS INT) + 1, gap_us, NULL)) AS q25_hi,
    MAX(IIF(i = CAST(0.50 * (n - 1) AS INT), gap_us, NULL)) AS q50_lo,
    MAX(IIF(i = CAST(0.50 * (n - 1) AS INT) + 1, gap_us, NULL)) AS q50_hi,
    MAX(IIF(i = CAST(0.75 * (n - 1) AS INT), gap_us, NULL)) AS q75_lo,
    MAX(IIF(i = CAST(0.75 * (n - 1) AS INT) + 1, gap_us, NULL)) AS q75_hi
  FROM ranked
  JOIN stats USING (stream, idle_category)
  GROUP BY stream, idle_category
)
SELECT
  stream,
  idle_category,
  total AS idle_us,
  total / SUM(total) OVER (PARTITION BY stream) AS idle_ratio,
  n AS count,
  mean AS mean_us,
  std AS std_us,
  min_v AS min_us,
  q25_lo + (0.25 * (n - 1) - CAST(0.25 * (n - 1) AS INT)) * COALESCE(q25_hi - q25_lo, 0) AS p25_us,
  q50_lo + (0.50 * (n - 1) - CAST(0.50 * (n - 1) AS INT)) * COALESCE(q50_hi - q50_lo, 0) AS p50_us,
  q75_lo + (0.75 * (n - 1) - CAST(0.75 * (n - 1) AS INT)) * COALESCE(q75_hi - q75_lo, 0) AS p75_us,
  max_v AS max_us
FROM quart
ORDER BY stream, idle_category;
