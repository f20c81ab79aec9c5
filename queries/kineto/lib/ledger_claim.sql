-- version: 2

INCLUDE PERFETTO MODULE kineto.lib.ledger_claim_buckets;
INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;

-- The one place a detector's claim on the step-time ledger is read as a total: per window, the time of the
-- buckets named by `buckets` (kineto_ledger_claim_buckets' grammar), the detector's header `claims:` line
-- verbatim (lint checks they are equal). Every window is returned, with claim_dur 0 where nothing of the
-- claim lies in it; diagnose resolves claims so that no two findings claim the same time
-- (kineto_sql/diagnose/claims.py).
CREATE OR REPLACE PERFETTO FUNCTION kineto_ledger_claim(
  -- The claims line: comma-separated bucket names, `kind.*`, `cold`, `rest of X`.
  buckets STRING
)
RETURNS TABLE(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- Iteration number.
  step LONG,
  -- 'Step' for a ProfilerStep window, else 'Iteration'.
  noun STRING,
  -- Window source (kineto_iterations.source).
  source STRING,
  -- The window is a cold start.
  is_cold BOOL,
  -- Window start.
  window_ts TIMESTAMP,
  -- Window width.
  window_dur DURATION,
  -- Ledger lanes of the window (devices, or 1 host-only lane).
  lanes LONG,
  -- The window's lanes are devices.
  has_device BOOL,
  -- Time of the claimed buckets in the window, summed over its lanes.
  claim_dur DURATION
) AS
WITH
  claimed AS (
    SELECT window_id, sum(dur) AS claim_dur
    FROM kineto_ledger_claim_buckets($buckets)
    GROUP BY window_id
  )
SELECT
  w.window_id,
  w.step,
  w.noun,
  w.source,
  w.is_cold,
  w.window_ts,
  w.window_dur,
  w.lanes,
  w.has_device,
  coalesce(c.claim_dur, 0) AS claim_dur
FROM kineto_ledger_windows AS w
LEFT JOIN claimed AS c
  USING (window_id);
