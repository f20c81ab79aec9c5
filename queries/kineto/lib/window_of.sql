-- version: 1
-- locked: 1 153f0c02c30842c0
-- lib: lib.dataloader@4 lib.event_categories@4 lib.host_slices@8 lib.iterations@6 lib.kernels@6
--   lib.runtime_calls@4 lib.steps@9 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.iterations;

-- The iteration window (kineto.lib.iterations) each event starts in, by one sorted pass over the windows
-- and the events of each process (windows of a process never overlap, so the latest window started at or
-- before an event is the only one that can hold it). Never a range lookup per row.

-- `tab` needs columns `id`, `upid`, `ts`. Output: id, window_id, step, is_cold; events outside every window
-- of their process are left out.
CREATE OR REPLACE PERFETTO MACRO kineto_window_of(
  -- Table or subquery with columns id, upid, ts.
  tab TableOrSubquery
)
RETURNS TableOrSubquery AS
(
  SELECT
    id,
    w_id AS window_id,
    w_step AS step,
    coalesce(w_id = w_cold, FALSE) AS is_cold
  FROM (
    SELECT
      u.id,
      u.ts,
      u.is_event,
      max(u.win) OVER w AS w_id,
      max(u.win_end) OVER w AS w_end,
      max(u.win_step) OVER w AS w_step,
      max(u.win_cold) OVER w AS w_cold
    FROM (
      SELECT
        NULL AS id,
        it.upid,
        it.ts,
        0 AS is_event,
        it.id AS win,
        it.ts + it.dur AS win_end,
        it.step AS win_step,
        CASE WHEN it.is_cold THEN it.id END AS win_cold
      FROM kineto_iterations AS it
      UNION ALL
      SELECT e.id, e.upid, e.ts, 1, NULL, NULL, NULL, NULL
      FROM $tab AS e
    ) AS u
    WINDOW w AS (PARTITION BY u.upid ORDER BY u.ts, u.is_event ROWS UNBOUNDED PRECEDING)
  )
  WHERE
    is_event = 1
    AND w_id IS NOT NULL
    AND ts < w_end
);
