-- id: fleet.step_balance
-- version: 1
-- kind: fleet
-- title: Per step: the rank with the most own work, and how far it sits beyond the median rank's
-- reads: balance_steps
-- why: every rank waits in each step's collectives for that step's slowest rank, so what a step costs the
--   job is the slowest rank's own work beyond the median rank's (the median rank is the typical one; the
--   others wait that much longer). A rank's typical step (fleet.rank_summary) finds a straggler that is
--   slow every step; read step by step, the same cost shows when the slowest rank changes from step to
--   step (data imbalance that moves between ranks: each rank draws its own batch size or sequence length).
--   Only steps every rank holds as steady (reading.rank_balance_steps, cold windows left out) compare;
--   ties go to the lowest rank.
CREATE OR REPLACE TABLE fleet_step_balance AS
WITH s AS (SELECT rank, step, own_work_us, step_us FROM balance_steps WHERE step IS NOT NULL),
shared AS (
  SELECT step FROM s GROUP BY step
  HAVING count(DISTINCT rank) = (SELECT count(DISTINCT rank) FROM s) AND count(DISTINCT rank) >= 2
),
ranked AS (
  SELECT s.*, row_number() OVER (PARTITION BY s.step ORDER BY s.own_work_us DESC, s.rank) AS pos
  FROM s JOIN shared USING (step)
),
med AS (SELECT step, count(*) AS ranks, median(own_work_us) AS median_us FROM ranked GROUP BY step)
SELECT r.step, m.ranks, CAST(r.rank AS BIGINT) AS slowest_rank, r.own_work_us AS slowest_us, m.median_us,
       r.own_work_us - m.median_us AS excess_us
FROM ranked r JOIN med m USING (step)
WHERE r.pos = 1
ORDER BY r.step;
