-- version: 1

INCLUDE PERFETTO MODULE kineto.lib.ledger;

-- A detector's claim on the step-time ledger per window, lane and bucket: the ledger rows of the buckets
-- named by `buckets`, the detector's header `claims:` line verbatim (lint checks they are equal). The
-- grammar is parsed here only: a comma-separated list of bucket names (`idle.sync`), whole kinds
-- (`busy.*`), `cold` (every bucket of a cold window) and `rest of X` (X, claimed after the specific claims
-- by diagnose). For a detector that needs the breakdown of its claim (the lane that waits most, a share
-- per bucket); kineto_ledger_claim (kineto.lib.ledger_claim) is its total per window.
CREATE OR REPLACE PERFETTO FUNCTION kineto_ledger_claim_buckets(
  -- The claims line: comma-separated bucket names, `kind.*`, `cold`, `rest of X`.
  buckets STRING
)
RETURNS TABLE(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- Iteration number.
  step LONG,
  -- The window is a cold start.
  is_cold BOOL,
  -- Device index; NULL for the host-only lane of a capture without device activity.
  device LONG,
  -- Bucket name.
  bucket STRING,
  -- busy, idle or host.
  kind STRING,
  -- Time in the bucket on the lane in the window.
  dur DURATION
) AS
WITH
  wanted AS (
    SELECT ',' || replace(replace($buckets, 'rest of ', ''), ' ', '') || ',' AS list
  )
SELECT l.window_id, l.step, l.is_cold, l.device, l.bucket, l.kind, l.dur
FROM kineto_ledger AS l, wanted AS q
WHERE
  instr(q.list, ',' || l.bucket || ',') > 0
  OR instr(q.list, ',' || l.kind || '.*,') > 0
  OR (l.is_cold AND instr(q.list, ',cold,') > 0);
