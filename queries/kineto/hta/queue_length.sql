-- id: hta.queue_length
-- version: 2
-- kind: hta
-- title: Queue length per stream: operations launched but not yet started, and time at the 1024 cap
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces; HolisticTraceAnalysis
--   (TraceCounters queue length)
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE
-- default max_queue_length: 1024

-- +1 at the start of each launch call (cudaLaunchKernel[ExC], cuLaunchKernel[Ex], cudaMemcpyAsync,
-- cudaMemsetAsync, HIP/MTIA equivalents) on the stream of its GPU event, -1 at the start of that
-- event: the running sum is the number of operations enqueued but not started. The count..max
-- columns are HTA's describe() of the value at each change point; mean_time_weighted_ql weighs each
-- value by how long it held. Unlike HTA 0.5.0 (whose result dict is keyed by rank, so only the last
-- stream of each rank survives), blocked time is reported for every stream.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

-- One row per stream with launched work.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_queue_length(
  -- TRUE = HTA 0.5.0's event set (stream != -1, last ProfilerStep dropped) and its statistics over change
  -- points (not time-weighted); FALSE = device work of the whole trace (the time-weighted mean is reported in
  -- both modes)
  hta_compat BOOL,
  -- The per-stream launch queue cap (CUDA's is 1024); time at or above it means the CPU blocks in the launch
  -- call.
  max_queue_length LONG
)
RETURNS TABLE(
  -- CUDA stream.
  stream LONG,
  -- Change points (2 per launch).
  count LONG,
  -- Mean queue length over change points (HTA's mean).
  mean DOUBLE,
  -- Sample standard deviation over change points.
  std DOUBLE,
  -- Smallest queue length.
  min LONG,
  -- 25th percentile over change points.
  p25 DOUBLE,
  -- Median over change points.
  p50 DOUBLE,
  -- 75th percentile over change points.
  p75 DOUBLE,
  -- Largest queue length.
  max LONG,
  -- Mean queue length weighted by how long each value held.
  mean_time_weighted DOUBLE,
  -- Time with the queue at or above max_queue_length, us.
  blocked_us DOUBLE,
  -- blocked_us over the trace's duration (HTA's relative_duration_at_max_queue_length).
  blocked_ratio DOUBLE
) AS
WITH calls AS MATERIALIZED (
  SELECT correlation, ts
  FROM _kineto_hta_rows
  WHERE stream = -1 AND correlation > 0
    AND IIF($hta_compat, hta_kept = 1, 1)
    AND name IN (SELECT n.name FROM _kineto_hta_launch_calls AS n WHERE n.queue_length = 1)
),
gpu AS MATERIALIZED (
  SELECT id, correlation, stream, ts FROM kineto_hta_gpu_events($hta_compat)
),
changes AS (
  SELECT g.stream, c.ts, 1 AS delta, 0 AS ord, g.id FROM calls c JOIN gpu g USING (correlation)
  UNION ALL
  SELECT g.stream, g.ts, -1 AS delta, 1 AS ord, g.id FROM gpu g WHERE g.correlation IN (SELECT correlation FROM calls)
),
series AS (
  SELECT
    stream, ts,
    SUM(delta) OVER (PARTITION BY stream ORDER BY ts, ord, id ROWS UNBOUNDED PRECEDING) AS ql,
    LEAD(ts) OVER (PARTITION BY stream ORDER BY ts, ord, id) AS next_ts
  FROM changes
),
ranked AS (
  SELECT
    stream, ts, ql, next_ts,
    ROW_NUMBER() OVER (PARTITION BY stream ORDER BY ql) - 1 AS i,
    COUNT(*) OVER (PARTITION BY stream) AS n,
    AVG(ql) OVER (PARTITION BY stream) AS mean
  FROM series
),
span AS (
  SELECT MAX(ts + dur) - MIN(ts) AS trace_ns FROM _kineto_hta_rows WHERE IIF($hta_compat, hta_kept = 1, 1)
),
agg AS (
  SELECT
    stream, n, mean,
    IIF(n > 1, SQRT(SUM((ql - mean) * (ql - mean)) / (n - 1)), NULL) AS std,
    MIN(ql) AS min_v,
    MAX(ql) AS max_v,
    MAX(IIF(i = CAST(0.25 * (n - 1) AS INT), ql, NULL)) AS q25_lo,
    MAX(IIF(i = CAST(0.25 * (n - 1) AS INT) + 1, ql, NULL)) AS q25_hi,
    MAX(IIF(i = CAST(0.50 * (n - 1) AS INT), ql, NULL)) AS q50_lo,
    MAX(IIF(i = CAST(0.50 * (n - 1) AS INT) + 1, ql, NULL)) AS q50_hi,
    MAX(IIF(i = CAST(0.75 * (n - 1) AS INT), ql, NULL)) AS q75_lo,
    MAX(IIF(i = CAST(0.75 * (n - 1) AS INT) + 1, ql, NULL)) AS q75_hi,
    SUM(IIF(next_ts IS NULL, 0, ql * (next_ts - ts))) AS ql_ns,
    MAX(ts) - MIN(ts) AS stream_ns,
    SUM(IIF(next_ts IS NOT NULL AND ql >= $max_queue_length, next_ts - ts, 0)) AS blocked_ns
  FROM ranked
  GROUP BY stream
)
SELECT
  stream,
  n AS count,
  mean,
  std,
  min_v AS min,
  q25_lo + (0.25 * (n - 1) - CAST(0.25 * (n - 1) AS INT)) * COALESCE(q25_hi - q25_lo, 0) AS p25,
  q50_lo + (0.50 * (n - 1) - CAST(0.50 * (n - 1) AS INT)) * COALESCE(q50_hi - q50_lo, 0) AS p50,
  q75_lo + (0.75 * (n - 1) - CAST(0.75 * (n - 1) AS INT)) * COALESCE(q75_hi - q75_lo, 0) AS p75,
  max_v AS max,
  IIF(stream_ns > 0, 1.0 * ql_ns / stream_ns, NULL) AS mean_time_weighted,
  blocked_ns / 1e3 AS blocked_us,
  1.0 * blocked_ns / span.trace_ns AS blocked_ratio
FROM agg, span
ORDER BY stream;
