-- id: hta.kernel_type_breakdown
-- version: 1
-- kind: hta
-- title: GPU time by kernel type: compute, communication, memory and each overlap of them
-- source: seed 000 section 4-5 (HTA GPU kernel breakdown); research/peers.md 1.4
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE
-- locked: 1 87b15eee1b661479
-- lib: hta.gpu_events@3 lib.event_categories@2 lib.interval_merge@2 lib.kernels@3

-- Each type's events are merged into disjoint intervals; a sweep then gives the time spent in each
-- exact combination of types running ("COMPUTATION overlapping COMMUNICATION" ...). The states are
-- exclusive, so the rows add up to the GPU busy time. Sync slices (type OTHER) are not counted.
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
WITH ev AS MATERIALIZED (
  SELECT kernel_type AS k, ts, end_ts FROM kineto_hta_gpu_events($hta_compat)
  WHERE kernel_type IN ('COMPUTATION', 'COMMUNICATION', 'MEMORY')
),
merged AS (
  SELECT k, ts, end_ts FROM _kineto_hta_merge!((SELECT k, ts, end_ts FROM ev))
),
edges AS (
  SELECT ts AS t, CASE k WHEN 'COMPUTATION' THEN 1 WHEN 'COMMUNICATION' THEN 2 ELSE 4 END AS delta FROM merged
  UNION ALL
  SELECT end_ts AS t, -CASE k WHEN 'COMPUTATION' THEN 1 WHEN 'COMMUNICATION' THEN 2 ELSE 4 END AS delta FROM merged
),
sweep AS (
  SELECT
    t,
    SUM(delta) OVER (ORDER BY t, delta ROWS UNBOUNDED PRECEDING) AS state,
    LEAD(t) OVER (ORDER BY t, delta) AS next_t
  FROM edges
),
states AS (
  SELECT state, SUM(next_t - t) AS dur_ns
  FROM sweep
  WHERE state > 0 AND next_t IS NOT NULL
  GROUP BY state
  HAVING SUM(next_t - t) > 0
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
