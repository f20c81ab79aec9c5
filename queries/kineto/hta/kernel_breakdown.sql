-- id: hta.kernel_breakdown
-- version: 2
-- kind: hta
-- title: Top GPU kernels per kernel type: count, sum, mean, min, max and std of their durations
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces (HTA GPU kernel
--   breakdown, top kernels per rank); HolisticTraceAnalysis
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE
-- default top_n: 10
-- default duration_ratio: 0.8

-- Unlike HTA 0.5.0, the statistics are always those of the individual launches: HTA re-aggregates
-- its table over the per-name sums, so every kept kernel shows max = min = mean = sum and std 0, and
-- "others" shows statistics of per-name sums (HolisticTraceAnalysis). Here "others" is the launches
-- of all folded names together, combined from the per-name sums (one pass over the launches).

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

-- One row per kept kernel name per type, plus one "others" row per type when names were folded.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_kernel_breakdown(
  -- TRUE = HTA 0.5.0's event set and name rules, and its rule for which names fold into "others" (beyond
  -- top_n, or past the duration_ratio quantile of the cumulative sums); FALSE = device work of the whole
  -- trace, the top_n names by total time kept.
  hta_compat BOOL,
  -- Names kept per kernel type (ranked by total time); the rest become one "others" row; 0 keeps all.
  top_n LONG,
  -- Hta_compat only: names whose running total exceeds this quantile of the running totals fold into "others"
  -- (HTA's duration_ratio)
  duration_ratio DOUBLE
)
RETURNS TABLE(
  -- COMPUTATION, COMMUNICATION or MEMORY.
  kernel_type STRING,
  -- Kernel name, or "others".
  name STRING,
  -- 1-based rank of the name by total time within its type (NULL for "others").
  rank_in_type LONG,
  -- Launches.
  count LONG,
  -- Total duration, us.
  sum_us DOUBLE,
  -- Mean duration, us.
  mean_us DOUBLE,
  -- Shortest launch, us.
  min_us DOUBLE,
  -- Longest launch, us.
  max_us DOUBLE,
  -- Sample standard deviation of the durations, us (0 for a single launch, as in HTA).
  std_us DOUBLE,
  -- Share of the type's total kernel time, %.
  pct_of_type DOUBLE
) AS
-- Launch statistics per name in one pass over the events; "others" combines its names' sums.
WITH per_name AS (
  SELECT
    kernel_type,
    name,
    COUNT(*) AS cnt,
    SUM(d) AS s,
    MIN(d) AS mn,
    MAX(d) AS mx,
    SUM(d * d) AS sq
  FROM (
    SELECT kernel_type, name, dur / 1e3 AS d FROM _kineto_hta_events!($hta_compat)
    WHERE kernel_type IN ('COMPUTATION', 'COMMUNICATION', 'MEMORY')
  )
  GROUP BY kernel_type, name
),
ordered AS (
  SELECT
    kernel_type, name, s, cnt, mn, mx, sq,
    ROW_NUMBER() OVER (PARTITION BY kernel_type ORDER BY s DESC, name) - 1 AS i,
    COUNT(*) OVER (PARTITION BY kernel_type) AS n,
    SUM(s) OVER (PARTITION BY kernel_type ORDER BY s DESC, name ROWS UNBOUNDED PRECEDING) AS cum
  FROM per_name
),
-- pandas' quantile (linear interpolation) of the running totals, per type (used in hta_compat).
cum_q AS (
  SELECT
    kernel_type,
    MAX(IIF(i = CAST($duration_ratio * (n - 1) AS INT), cum, NULL))
      + ($duration_ratio * (n - 1) - CAST($duration_ratio * (n - 1) AS INT))
        * COALESCE(MAX(IIF(i = CAST($duration_ratio * (n - 1) AS INT) + 1, cum, NULL))
                   - MAX(IIF(i = CAST($duration_ratio * (n - 1) AS INT), cum, NULL)), 0) AS q
  FROM ordered
  GROUP BY kernel_type
),
labels AS (
  SELECT
    o.kernel_type,
    CASE
      WHEN $top_n <= 0 OR o.n <= $top_n THEN o.name
      WHEN o.i >= $top_n THEN 'others'
      WHEN $hta_compat AND o.cum > q.q THEN 'others'
      ELSE o.name
    END AS label,
    o.i + 1 AS rank_in_type,
    o.cnt,
    o.s,
    o.mn,
    o.mx,
    o.sq
  FROM ordered o
  JOIN cum_q q USING (kernel_type)
),
grouped AS (
  SELECT
    kernel_type,
    label AS name,
    IIF(label = 'others', NULL, MIN(rank_in_type)) AS rank_in_type,
    SUM(cnt) AS count,
    SUM(s) AS sum_us,
    SUM(s) / SUM(cnt) AS mean_us,
    MIN(mn) AS min_us,
    MAX(mx) AS max_us,
    SUM(sq) AS sq
  FROM labels
  GROUP BY kernel_type, label
)
SELECT
  kernel_type,
  name,
  rank_in_type,
  count,
  sum_us,
  mean_us,
  min_us,
  max_us,
  IIF(count > 1, SQRT(MAX((sq - count * mean_us * mean_us) / (count - 1), 0)), 0) AS std_us,
  100.0 * sum_us / SUM(sum_us) OVER (PARTITION BY kernel_type) AS pct_of_type
FROM grouped
ORDER BY kernel_type, rank_in_type IS NULL, sum_us DESC;
