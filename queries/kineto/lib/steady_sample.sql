-- version: 1
-- locked: 1 0f2f347f8fa9da3a
-- lib: lib.dataloader@4 lib.event_categories@4 lib.host_slices@8 lib.iterations@6 lib.kernels@6
--   lib.runtime_calls@4 lib.steps@9 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.iterations;

-- Whether the steady iterations of a capture (kineto.lib.iterations, cold windows left out) are a sample of
-- the steady state that step-time shares can be read from. One row per trace with iterations.
--
-- They are not (`representative` FALSE) when both hold:
-- * fewer than 3 steady windows: one or two iterations are not a distribution (the seed's minimum
--   capture is 3 steps; catalog.schedule_distortion uses the same count), so a single odd or truncated
--   window (the stub ProfilerStep a profiler opens at its last step() and closes at stop()) cannot be told
--   from a typical one; and
-- * the steady windows hold less than 10% of the analysed time (steady + cold): a steady-state cause
--   measured there is then, by construction, below the 10% of captured time that makes a finding high, so
--   rating it against the tiny steady sample would call a fraction of the capture "every step".
-- Then the capture is mostly its cold start: diagnose reads every share against all the windows (cold
-- included) and ranks cold and steady findings together, and catalog.capture_validity says the steady
-- sample is too small. Several steady windows, or a steady part of at least 10% of the capture, stay a
-- sample whatever the cold window holds (a long first step of a real run is amortised; it does not make
-- the steady steps unreadable).
CREATE OR REPLACE PERFETTO TABLE kineto_steady_sample(
  -- Steady (not cold) windows.
  steady_windows LONG,
  -- Cold windows.
  cold_windows LONG,
  -- Summed width of the steady windows.
  steady_dur DURATION,
  -- Summed width of the cold windows.
  cold_dur DURATION,
  -- Steady share of all windows' width, %.
  steady_pct DOUBLE,
  -- FALSE when fewer than 3 steady windows hold under 10% of the windows' time.
  representative BOOL,
  -- Why not, in one sentence with the numbers; NULL when representative.
  sentence STRING
) AS
WITH
  w AS (
    SELECT
      sum(NOT is_cold) AS steady_n,
      sum(is_cold) AS cold_n,
      sum(CASE WHEN NOT is_cold THEN dur ELSE 0 END) AS steady_dur,
      sum(CASE WHEN is_cold THEN dur ELSE 0 END) AS cold_dur
    FROM kineto_iterations
  ),
  judged AS (
    SELECT
      steady_n,
      cold_n,
      steady_dur,
      cold_dur,
      100.0 * steady_dur / max(steady_dur + cold_dur, 1) AS steady_pct,
      NOT (steady_n < 3 AND 100.0 * steady_dur / max(steady_dur + cold_dur, 1) < 10) AS representative
    FROM w
    WHERE
      steady_n + cold_n > 0
  )
SELECT
  steady_n AS steady_windows,
  cold_n AS cold_windows,
  steady_dur,
  cold_dur,
  round(steady_pct, 2) AS steady_pct,
  representative,
  CASE
    WHEN NOT representative THEN printf(
      'The steady sample is too small to read a steady state from: %d steady window%s of %.3f ms in all hold%s %.1f%% of the %.3f ms analysed (%d cold window%s the rest), so shares are of the whole capture and the cold start is ranked with them.',
      steady_n,
      CASE WHEN steady_n = 1 THEN '' ELSE 's' END,
      steady_dur / 1e6,
      CASE WHEN steady_n = 1 THEN 's' ELSE '' END,
      steady_pct,
      (steady_dur + cold_dur) / 1e6,
      cold_n,
      CASE WHEN cold_n = 1 THEN '' ELSE 's' END
    )
  END AS sentence
FROM judged;
