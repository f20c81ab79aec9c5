-- id: fleet.distribution
-- version: 3
-- kind: fleet
-- title: Each compared quantity across ranks: median, MAD, spread, the worst rank, its robust z-score and excess
-- reads: fleet_rank_summary
-- why: ranks of one job do the same work, so a quantity's distribution across ranks is tight and the
--   median is the typical rank whatever the outliers (it moves by at most one rank per outlier). The worst
--   rank is the one furthest in the direction that costs the job (later start, more compute, more idle;
--   LESS communication: the rank everyone waits for spends least time waiting itself); ties go to the
--   lowest rank. Its robust z is (value - median) / (1.4826 x MAD), the MAD scaled to a normal standard
--   deviation, falling back to the population standard deviation when more than half the ranks agree
--   exactly (MAD 0). The excess is how far it sits beyond the median in the costly direction, and
--   excess_pct_of_step is that excess over the median rank's step: the share of every step the job loses
--   to that rank. Quantities present on fewer than two ranks have no distribution. A step-start lag is a
--   claim about clocks: its excess is taken inside the clock band (twice the widest rank's band,
--   fleet.clock_offsets), so a lag no larger than the band costs nothing.
CREATE OR REPLACE TABLE fleet_distribution AS
WITH quantities(quantity, meaning, direction, ord) AS (
  VALUES ('step_start_lag_us', 'step start (after the earliest rank)', 1, 1),
         ('compute_us', 'GPU compute time', 1, 2),
         ('comm_us', 'communication kernel time', -1, 3),
         ('idle_us', 'GPU idle time', 1, 4),
         ('own_work_us', 'own work per step (outside collective waits)', 1, 5)
),
observed AS (
  UNPIVOT (SELECT rank, step_start_lag_us, compute_us, comm_us, idle_us, own_work_us FROM fleet_rank_summary)
  ON step_start_lag_us, compute_us, comm_us, idle_us, own_work_us INTO NAME quantity VALUE value
),
stats AS (
  SELECT quantity, count(*) AS ranks, median(value) AS median, stddev_samp(value) AS std,
         stddev_pop(value) AS std_pop, min(value) AS minimum, max(value) AS maximum
  FROM observed GROUP BY quantity HAVING count(*) >= 2
),
spread AS (
  SELECT o.quantity, median(abs(o.value - s.median)) AS mad
  FROM observed o JOIN stats s USING (quantity) GROUP BY o.quantity
),
ordered AS (
  SELECT o.quantity, o.rank, o.value,
         row_number() OVER (PARTITION BY o.quantity ORDER BY o.value * q.direction DESC, o.rank) AS pos
  FROM observed o JOIN quantities q USING (quantity)
),
step AS (SELECT NULLIF(median(step_us), 0) AS median_step_us, coalesce(2 * max(clock_band_us), 0.0) AS band_us
          FROM fleet_rank_summary),
scaled AS (
  SELECT s.*, sp.mad, q.meaning, q.direction, q.ord, w.rank AS worst_rank, w.value AS worst_value,
         CASE WHEN 1.4826 * sp.mad > 0 THEN 1.4826 * sp.mad WHEN s.std_pop > 0 THEN s.std_pop END AS scale,
         greatest(0.0, (w.value - s.median) * q.direction
                       - CASE WHEN s.quantity = 'step_start_lag_us' THEN st.band_us ELSE 0.0 END) AS excess_us,
         st.median_step_us
  FROM stats s
  JOIN spread sp USING (quantity)
  JOIN quantities q USING (quantity)
  JOIN ordered w ON w.quantity = s.quantity AND w.pos = 1
  CROSS JOIN step st
)
SELECT quantity, meaning, direction, ord, ranks, median, mad, std, minimum AS min, maximum AS max,
       worst_rank, worst_value, coalesce((worst_value - median) / scale, 0.0) AS worst_z, excess_us,
       100.0 * excess_us / median_step_us AS excess_pct_of_step
FROM scaled
ORDER BY ord;
