-- id: fleet.rank_summary
-- version: 3
-- kind: fleet
-- title: Per-rank quantities compared across ranks (us): step, step-start lag, GPU compute, communication, idle, own work
-- reads: load, hta_steps, hta_temporal, hta_overlap, hta_balance, fleet_clock_offsets
-- why: a straggler is a rank that is later or slower than the others where it costs the whole job step
--   time: it starts its step late (the others wait for it in their first collective), computes longer, or
--   idles more; its victims show it as the opposite, more time in communication kernels (waiting in NCCL).
--   Step starts compare on the job's clock: the rank's first profiler step start plus the clock offset the
--   loader removed (ts_offset_ns), less the rank's clock offset against the other ranks (fleet.clock_offsets,
--   0 where the clocks could not be aligned), against the earliest rank's; clock_band_us is that offset's band. step_us is the rank's median step, the scale
--   every excess is judged against. A rank with a temporal breakdown but no communication kernels has
--   comm_us 0 (it sent nothing), a rank without a temporal breakdown has none. own_work_us is
--   reading.rank_balance's mean own work per steady step (kineto.lib.rank_balance: device busy outside
--   exposed collectives, or on a CPU trainer every host bucket but the collective wait), the quantity
--   catalog.straggler_rank judges one rank by, so the per-rank and cross-rank readings agree; it is what
--   shows a slower CPU (gloo) rank, which has no GPU compute to compare.
CREATE OR REPLACE TABLE fleet_rank_summary AS
WITH ranks AS (
  SELECT rank, any_value(ts_offset_ns) AS ts_offset_ns FROM load GROUP BY rank
),
steps AS (
  SELECT rank, median(dur_us) AS step_us, arg_min(start_us, row_index) AS first_start_us
  FROM hta_steps GROUP BY rank
),
starts AS (
  SELECT r.rank, r.ts_offset_ns / 1e3 - coalesce(c.applied_offset_ns, 0) / 1e3 + s.first_start_us AS start_us, s.step_us
  FROM ranks r JOIN steps s USING (rank) LEFT JOIN fleet_clock_offsets c USING (rank)
),
temporal AS (SELECT rank, compute_us, idle_us FROM hta_temporal WHERE row_index = 0),
overlap AS (SELECT rank, comm_us, overlap_pct FROM hta_overlap WHERE row_index = 0),
balance AS (SELECT rank, own_work_us FROM hta_balance WHERE row_index = 0)
SELECT
  r.rank,
  CAST(st.step_us AS DOUBLE) AS step_us,
  CAST(st.start_us - min(st.start_us) OVER () AS DOUBLE) AS step_start_lag_us,
  CAST(t.compute_us AS DOUBLE) AS compute_us,
  CAST(CASE WHEN t.rank IS NULL THEN NULL WHEN o.rank IS NULL THEN 0 ELSE o.comm_us END AS DOUBLE) AS comm_us,
  CAST(t.idle_us AS DOUBLE) AS idle_us,
  CAST(o.overlap_pct AS DOUBLE) AS overlap_pct,
  CAST(b.own_work_us AS DOUBLE) AS own_work_us,
  CAST(c.band_us AS DOUBLE) AS clock_band_us
FROM ranks r
LEFT JOIN fleet_clock_offsets c USING (rank)
LEFT JOIN starts st USING (rank)
LEFT JOIN temporal t USING (rank)
LEFT JOIN overlap o USING (rank)
LEFT JOIN balance b USING (rank)
ORDER BY r.rank;
