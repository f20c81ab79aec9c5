-- version: 1

INCLUDE PERFETTO MODULE kineto.lib.rank_balance;

-- The typical steady step of this rank: the medians over the steady windows of each window's wait-to-work
-- ratio and wait share (mean of the two middles when even). A sum over the steps lets one stretched step
-- decide: a single slow op (a machine stall) in one window adds its time to the rank's own work and pulls
-- the summed ratio of a rank that waits in every other step under any floor. The median step is what the
-- rank does in most steps, and one outlier step moves it by at most one place.
CREATE OR REPLACE PERFETTO TABLE kineto_rank_balance_typical(
  -- Steady windows.
  windows LONG,
  -- Median over the windows of wait_dur / own_work_dur (a window without own work counts 1 ns of it).
  median_wait_to_work DOUBLE,
  -- Median over the windows of the wait's share of the window, % (per lane).
  median_wait_pct DOUBLE
) AS
WITH
  per_window AS (
    SELECT
      1.0 * wait_dur / max(own_work_dur, 1) AS ratio,
      100.0 * wait_dur / max(window_dur * lanes, 1) AS pct
    FROM kineto_rank_balance
  ),
  ratios AS (
    SELECT ratio, row_number() OVER (ORDER BY ratio) AS k, count(*) OVER () AS n FROM per_window
  ),
  shares AS (
    SELECT pct, row_number() OVER (ORDER BY pct) AS k, count(*) OVER () AS n FROM per_window
  )
SELECT
  (SELECT count(*) FROM per_window) AS windows,
  (SELECT avg(ratio) FROM ratios WHERE k IN ((n + 1) / 2, (n + 2) / 2)) AS median_wait_to_work,
  (SELECT avg(pct) FROM shares WHERE k IN ((n + 1) / 2, (n + 2) / 2)) AS median_wait_pct
WHERE
  EXISTS (SELECT 1 FROM per_window);
