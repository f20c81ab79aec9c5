-- id: hta.kernel_type_breakdown
-- version: 3
-- kind: hta
-- title: GPU time by kernel type: compute, communication, memory and each overlap of them
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces (HTA GPU kernel
--   breakdown); HolisticTraceAnalysis
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE

-- One sweep over the events' starts and ends (gpu_events' busy states, built once per trace in
-- hta_compat) gives the time spent in each exact combination of types running ("COMPUTATION
-- overlapping COMMUNICATION" ...), as merging each type's events and sweeping the merged intervals
-- would. The states are exclusive, so the rows add up to the GPU busy time. Sync slices (type OTHER)
-- are not counted.
-- HTA sums these over ranks; kineto-sql ranks prints them per rank.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

-- One row per combination of kernel types that ran at some point.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_kernel_type_breakdown(
  -- TRUE = HTA 0.5.0's event set (stream != -1, last ProfilerStep dropped) and name rules; FALSE = kernels,
  -- memcpy and memset of the whole trace.
  hta_compat BOOL
)
RETURNS TABLE(
  -- The combination running, HTA's label: e.g. COMPUTATION, COMPUTATION overlapping COMMUNICATION.
  kernel_type STRING,
  -- Time in exactly this combination, us.
  dur_us DOUBLE,
  -- Share of all busy time, %.
  pct DOUBLE
) AS
WITH st AS (
  SELECT state, dur_ns FROM _kineto_hta_mode_states!($hta_compat)
),
states AS (
  SELECT state & 7 AS state, SUM(dur_ns) AS dur_ns
  FROM st
  WHERE state & 7 > 0
  GROUP BY state & 7
  HAVING SUM(dur_ns) > 0
),
labelled AS (
  SELECT
    CASE state
      WHEN 1 THEN 'COMPUTATION'
      WHEN 2 THEN 'COMMUNICATION'
      WHEN 3 THEN 'COMPUTATION overlapping COMMUNICATION'
      WHEN 4 THEN 'MEMORY'
      WHEN 5 THEN 'COMPUTATION overlapping MEMORY'
      WHEN 6 THEN 'COMMUNICATION overlapping MEMORY'
      ELSE 'COMPUTATION overlapping COMMUNICATION overlapping MEMORY'
    END AS kernel_type,
    dur_ns
  FROM states
)
SELECT
  kernel_type,
  dur_ns / 1e3 AS dur_us,
  100.0 * dur_ns / SUM(dur_ns) OVER () AS pct
FROM labelled
ORDER BY dur_ns DESC;
