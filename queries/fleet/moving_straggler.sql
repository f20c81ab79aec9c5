-- id: fleet.moving_straggler
-- version: 1
-- kind: fleet
-- title: Data imbalance that moves between ranks: the slowest rank changes by step, and its excess costs $threshold_pct % of a step
-- reads: fleet_step_balance, fleet_rank_summary, fleet_shape_balance
-- param: threshold_pct DOUBLE, 10 by default (the straggler verdict's threshold)
-- why: when no rank is slow every step (fleet.straggler names none) the job can still lose a tenth of every
--   step to imbalance: each step the others wait for that step's slowest rank (fleet.step_balance). The
--   reading names it when (1) the slowest rank changes between steps (a rank slowest every step is a fixed
--   straggler, fleet.straggler's to name), (2) the ranks' work differs in ops or input shapes
--   (fleet.shape_balance: the imbalance is in the data; ranks that run the same shapes and trade the
--   slowest place are machine noise, which on shared hosts moves by tens of % of a short step), and (3) the
--   mean per-step excess of the slowest rank over the median rank is at least threshold_pct of the median
--   step, the same floor as a fixed straggler's. The rank named is the one whose steps as the slowest cost
--   the others most in all (the sum of its per-step excess); slowest_counts says how the place moves.
WITH b AS (SELECT * FROM fleet_step_balance),
job AS (SELECT count(*) AS steps, count(DISTINCT slowest_rank) AS slowest_ranks, avg(excess_us) AS mean_excess_us FROM b),
step AS (SELECT NULLIF(median(step_us), 0) AS median_step_us FROM fleet_rank_summary),
per_rank AS (SELECT slowest_rank AS rank, count(*) AS slowest_steps, sum(excess_us) AS excess_sum_us FROM b GROUP BY 1),
costliest AS (SELECT * FROM per_rank ORDER BY excess_sum_us DESC, rank LIMIT 1),
counts AS (
  SELECT string_agg('rank ' || rank || ': ' || slowest_steps, ', ' ORDER BY slowest_steps DESC, rank) AS slowest_counts
  FROM per_rank
),
imbalance AS (SELECT coalesce(bool_or(work_differs), false) AS work_differs FROM fleet_shape_balance)
SELECT j.steps, j.slowest_ranks, j.mean_excess_us, st.median_step_us,
       100.0 * j.mean_excess_us / st.median_step_us AS excess_pct_of_step, CAST($threshold_pct AS DOUBLE) AS threshold_pct,
       c.rank AS costliest_rank, c.slowest_steps, c.excess_sum_us,
       (SELECT sum(excess_us) FROM b) AS total_excess_us, n.slowest_counts, i.work_differs,
       CASE WHEN j.steps >= 2 AND j.slowest_ranks >= 2 AND i.work_differs
                 AND 100.0 * j.mean_excess_us / st.median_step_us >= $threshold_pct THEN c.rank END AS straggler
FROM job j CROSS JOIN step st CROSS JOIN imbalance i CROSS JOIN counts n LEFT JOIN costliest c ON TRUE;
