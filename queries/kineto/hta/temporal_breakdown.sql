-- id: hta.temporal_breakdown
-- version: 1
-- kind: hta
-- title: Temporal breakdown: GPU compute, non-compute and idle time over the GPU-busy span (HTA's definition)
-- source: seed 000 section 4-5 (HTA temporal breakdown per rank); research/peers.md 1.1
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE
-- locked: 1 f687daa6cc353c5b
-- lib: hta.gpu_events@3 lib.event_categories@2 lib.interval_merge@2 lib.kernels@3

-- HTA's definition, kept in both modes: the span runs from the first GPU event's start to the last
-- one's end (not the profiler-step window); idle = span - |union of all GPU events|; compute =
-- |union of COMPUTATION events|; non-compute = |union of all| - |union of compute| (communication,
-- memcpy/memset and, in hta_compat, sync slices). Percentages are of the span.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

-- One row: the trace's GPU time split into compute, non-compute and idle, in microseconds and %.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_temporal_breakdown(
  -- TRUE = HTA 0.5.0's event set (stream != -1, sync slices count as busy, last ProfilerStep dropped) and
  -- name rules; FALSE = kernels, memcpy and memset of the whole trace.
  hta_compat BOOL
)
RETURNS TABLE(
  -- GPU span with no GPU event running, us.
  idle_us DOUBLE,
  -- Time at least one compute kernel runs, us.
  compute_us DOUBLE,
  -- Busy time with no compute kernel running (communication, memory, sync), us.
  non_compute_us DOUBLE,
  -- First GPU event start to last GPU event end, us (HTA's kernel_time).
  span_us DOUBLE,
  -- idle_us / span_us, %.
  idle_pct DOUBLE,
  -- compute_us / span_us, %.
  compute_pct DOUBLE,
  -- non_compute_us / span_us, %.
  non_compute_pct DOUBLE,
  -- GPU events read.
  gpu_events LONG
) AS
WITH ev AS MATERIALIZED (
  SELECT ts, end_ts, kernel_type FROM kineto_hta_gpu_events($hta_compat)
),
busy AS (
  SELECT SUM(end_ts - ts) AS busy_ns FROM _kineto_hta_merge!((SELECT 1 AS k, ts, end_ts FROM ev))
),
comp AS (
  SELECT SUM(end_ts - ts) AS comp_ns
  FROM _kineto_hta_merge!((SELECT 1 AS k, ts, end_ts FROM ev WHERE kernel_type = 'COMPUTATION'))
),
span AS (
  SELECT MAX(end_ts) - MIN(ts) AS span_ns, COUNT(*) AS n FROM ev
)
SELECT
  (span.span_ns - busy.busy_ns) / 1e3 AS idle_us,
  COALESCE(comp.comp_ns, 0) / 1e3 AS compute_us,
  (busy.busy_ns - COALESCE(comp.comp_ns, 0)) / 1e3 AS non_compute_us,
  span.span_ns / 1e3 AS span_us,
  100.0 * (span.span_ns - busy.busy_ns) / span.span_ns AS idle_pct,
  100.0 * COALESCE(comp.comp_ns, 0) / span.span_ns AS compute_pct,
  100.0 * (busy.busy_ns - COALESCE(comp.comp_ns, 0)) / span.span_ns AS non_compute_pct,
  span.n AS gpu_events
FROM span, busy, comp
WHERE span.n > 0;
