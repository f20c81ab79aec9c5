-- id: reading.rank_balance_steps
-- version: 1
-- kind: reading
-- title: Rank balance per step: this rank's own work and its wait in collectives in each steady step
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Straggler rank";
--   Reading order, step 5
-- needs: none
-- status: preview

-- One row per steady iteration window of kineto.lib.rank_balance (its header gives the definitions and
-- why), per lane. reading.rank_balance is the rank's typical step; these rows let the cross-rank reading
-- (queries/fleet/step_balance.sql) ask, step by step, which rank is slowest: with data imbalance that
-- moves between ranks (each rank drawing its own batch size or sequence length every step), the slowest
-- rank changes from step to step and no rank's typical step stands out, yet every step the others wait
-- for that step's slowest rank. Silent on a capture without windows.

INCLUDE PERFETTO MODULE kineto.lib.rank_balance;

-- One row per steady window.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_rank_balance_steps()
RETURNS TABLE(
  -- Iteration number (N of ProfilerStep#N: the same step on every rank).
  step LONG,
  -- Window width, us.
  step_us DOUBLE,
  -- Own work per lane, us.
  own_work_us DOUBLE,
  -- Wait in collectives per lane, us.
  comm_wait_us DOUBLE
) AS
SELECT
  step,
  window_dur / 1e3 AS step_us,
  1.0 * own_work_dur / lanes / 1e3 AS own_work_us,
  1.0 * wait_dur / lanes / 1e3 AS comm_wait_us
FROM kineto_rank_balance
ORDER BY step;
