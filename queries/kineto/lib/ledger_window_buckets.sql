-- version: 1

INCLUDE PERFETTO MODULE kineto.lib.ledger;

-- One row per window and bucket of the step-time ledger, summed over the window's lanes: how a window's
-- time splits, for a rule that compares windows (a cold window against the steady ones) without reading
-- kineto_ledger beside its claim.
CREATE OR REPLACE PERFETTO TABLE kineto_ledger_window_buckets(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- The window is a cold start (kineto_iterations.is_cold).
  is_cold BOOL,
  -- Bucket name.
  bucket STRING,
  -- busy, idle or host.
  kind STRING,
  -- Time in the bucket, summed over the window's lanes.
  dur DURATION
) AS
SELECT l.window_id, max(l.is_cold) AS is_cold, l.bucket, max(l.kind) AS kind, sum(l.dur) AS dur
FROM kineto_ledger AS l
GROUP BY l.window_id, l.bucket;
