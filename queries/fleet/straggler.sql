-- id: fleet.straggler
-- version: 2
-- kind: fleet
-- title: The straggler verdict: the rank that costs the job most, named when it costs $threshold_pct % of a step
-- reads: fleet_rank_summary, fleet_distribution
-- param: threshold_pct DOUBLE, 10 by default (kineto-sql fleet --threshold-pct)
-- why: every quantity's worst rank costs the job its excess once per step; the verdict takes the quantity
--   whose worst rank costs most (ties: step start, compute, communication, idle, own work, in that order) and names
--   it the straggler when that cost is at least threshold_pct of the median step. Below 10% of a step the
--   gap is within what ranks of a healthy job differ by (data-dependent kernels, host jitter, a collective
--   that lands late once); above it one rank's delay is a tenth of the job's time. One rank has nobody to
--   be compared with: no verdict.
WITH job AS (
  SELECT count(*) AS ranks, median(step_us) AS median_step_us FROM fleet_rank_summary
),
worst AS (
  SELECT * FROM fleet_distribution WHERE excess_pct_of_step IS NOT NULL
  ORDER BY excess_pct_of_step DESC, ord LIMIT 1
)
SELECT j.ranks, j.median_step_us, CAST($threshold_pct AS DOUBLE) AS threshold_pct,
       w.quantity, w.meaning, w.direction, w.worst_rank, w.worst_value, w.median, w.worst_z, w.excess_us,
       w.excess_pct_of_step,
       CASE WHEN j.ranks >= 2 AND w.excess_pct_of_step >= $threshold_pct THEN w.worst_rank END AS straggler
FROM job j LEFT JOIN worst w ON TRUE;
