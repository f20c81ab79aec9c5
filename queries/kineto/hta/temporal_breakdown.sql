-- id: hta.temporal_breakdown
-- version: 3
-- kind: hta
-- title: Temporal breakdown: GPU compute, non-compute and idle time over the GPU-busy span (HTA's definition)
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces (HTA temporal breakdown
--   per rank); HolisticTraceAnalysis
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE

-- HTA's definition, kept in both modes: the span runs from the first GPU event's start to the last
-- one's end (not the profiler-step window); idle = span - |union of all GPU events|; compute =
-- |union of COMPUTATION events|; non-compute = |union of all| - |union of compute| (communication,
-- memcpy/memset and, in hta_compat, sync slices). Percentages are of the span. Both unions are sums
-- of gpu_events' busy states (one sweep of the events, built once per trace in hta_compat).

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
WITH st AS (
  SELECT state, dur_ns FROM _kineto_hta_mode_states!($hta_compat)
),
busy AS (
  SELECT COALESCE(SUM(dur_ns), 0) AS busy_ns, COALESCE(SUM(IIF(state & 1, dur_ns, 0)), 0) AS comp_ns FROM st
),
span AS (
  SELECT MAX(end_ts) - MIN(ts) AS span_ns, COUNT(*) AS n FROM _kineto_hta_events!($hta_compat)
)
SELECT
  (span.span_ns - busy.busy_ns) / 1e3 AS idle_us,
  busy.comp_ns / 1e3 AS compute_us,
  (busy.busy_ns - busy.comp_ns) / 1e3 AS non_compute_us,
  span.span_ns / 1e3 AS span_us,
  100.0 * (span.span_ns - busy.busy_ns) / span.span_ns AS idle_pct,
  100.0 * busy.comp_ns / span.span_ns AS compute_pct,
  100.0 * (busy.busy_ns - busy.comp_ns) / span.span_ns AS non_compute_pct,
  span.n AS gpu_events
FROM span, busy
WHERE span.n > 0;
