-- version: 1

INCLUDE PERFETTO MODULE kineto.lib.ledger;

-- One row per window of the step-time ledger (kineto.lib.ledger): what every claiming detector and the
-- step table read about a window, aggregated once over its lanes. `noun` is how a sentence names the window
-- ('Step' for a ProfilerStep window, 'Iteration' for an inferred one).
CREATE OR REPLACE PERFETTO TABLE kineto_ledger_windows(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- Process of the window.
  upid JOINID(process.id),
  -- Iteration number (kineto_iterations.step).
  step LONG,
  -- 'Step' for a ProfilerStep window, else 'Iteration'.
  noun STRING,
  -- Window source (kineto_iterations.source).
  source STRING,
  -- The window is a cold start (kineto_iterations.is_cold).
  is_cold BOOL,
  -- Window start.
  window_ts TIMESTAMP,
  -- Window width.
  window_dur DURATION,
  -- Ledger lanes of the window: its devices, or 1 host-only lane; window_dur x lanes is its ledger time.
  lanes LONG,
  -- The window's lanes are devices (the capture has device activity).
  has_device BOOL,
  -- Device busy time summed over the lanes (busy.* buckets).
  busy_dur DURATION,
  -- Start of the first busy segment on any lane (NULL when no device was busy).
  first_busy_ts TIMESTAMP,
  -- Communication hidden under compute (busy.comm_overlapped), summed over the lanes.
  comm_overlapped_dur DURATION
) AS
SELECT
  l.window_id,
  max(l.upid) AS upid,
  max(l.step) AS step,
  CASE WHEN max(l.source) = 'profiler_step' THEN 'Step' ELSE 'Iteration' END AS noun,
  max(l.source) AS source,
  max(l.is_cold) AS is_cold,
  max(l.window_ts) AS window_ts,
  max(l.window_dur) AS window_dur,
  count(DISTINCT coalesce(l.device, -1)) AS lanes,
  max(l.device IS NOT NULL) AS has_device,
  sum(CASE WHEN l.kind = 'busy' THEN l.dur ELSE 0 END) AS busy_dur,
  min(CASE WHEN l.kind = 'busy' THEN l.first_ts END) AS first_busy_ts,
  sum(CASE WHEN l.bucket = 'busy.comm_overlapped' THEN l.dur ELSE 0 END) AS comm_overlapped_dur
FROM kineto_ledger AS l
GROUP BY l.window_id;
