-- id: reading.rank_balance
-- version: 2
-- kind: reading
-- title: Rank balance: this rank's own work against its wait in collectives, per steady step (the straggler quantities)
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Straggler rank";
--   Reading order, step 5
-- needs: none
-- status: preview

-- One row for the rank: the means per steady iteration window of kineto.lib.rank_balance (own work, wait
-- in collectives; its header gives the definitions and why), per lane. The fleet's cross-rank
-- SQL (queries/fleet) compares these across ranks (the straggler has the longest own work and the shortest wait);
-- catalog.straggler_rank judges one rank by the same two numbers. Silent on a capture without windows.

INCLUDE PERFETTO MODULE kineto.lib.rank_balance;
INCLUDE PERFETTO MODULE kineto.lib.rank_balance_typical;

-- One row: the rank's balance.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_rank_balance()
RETURNS TABLE(
  -- Steady windows.
  windows LONG,
  -- Mean steady window width, us.
  step_us DOUBLE,
  -- Mean own work per window and lane, us.
  own_work_us DOUBLE,
  -- Mean wait in collectives per window and lane, us.
  comm_wait_us DOUBLE,
  -- Wait / own work in the median steady step (kineto_rank_balance_typical: one stretched step cannot
  -- swing it), the ratio catalog.straggler_rank judges; NULL without own work.
  wait_to_work DOUBLE,
  -- The capture has device activity (own work is device time) or not (host time).
  has_device BOOL
) AS
SELECT
  count(*) AS windows,
  avg(window_dur) / 1e3 AS step_us,
  avg(1.0 * own_work_dur / lanes) / 1e3 AS own_work_us,
  avg(1.0 * wait_dur / lanes) / 1e3 AS comm_wait_us,
  CASE
    WHEN sum(own_work_dur) > 0 THEN round((SELECT median_wait_to_work FROM kineto_rank_balance_typical), 3)
  END AS wait_to_work,
  max(has_device) AS has_device
FROM kineto_rank_balance
HAVING
  count(*) > 0;
