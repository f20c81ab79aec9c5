-- id: reading.step_ledger
-- version: 1
-- kind: reading
-- title: Step-time ledger: each iteration's time, per device, split into buckets that sum to it exactly
-- references: "torch.profiler & HTA: the Framework View", Reading order, steps 1-3 (step table, GPU busy, gap
--   attribution) as one account
-- needs: none
-- status: preview

-- Windows come from kineto.lib.iterations (ProfilerStep#N, else a repeating marker, else the whole
-- capture; `source` says which, `is_cold` marks a first iteration dominated by one-time work). Buckets and
-- their precedence are documented in kineto.lib.ledger: device busy by kernel family (collectives split
-- into exposed and overlapped), device idle by what the host was doing at that instant (sync, blocking
-- copy, DataLoader, host-side collective, GC, profiler, allocation, launch issuing, host compute,
-- unattributed); a capture without device activity gets the same causes seen from the host.

INCLUDE PERFETTO MODULE kineto.lib.ledger;

-- One row per window, device and bucket.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_step_ledger()
RETURNS TABLE(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- Iteration number: N of ProfilerStep#N, else 1, 2, ... in time order.
  step LONG,
  -- Where the window came from: profiler_step, dataloader, optimizer_step, module_forward,
  -- record_function, execute_model, annotation or capture.
  source STRING,
  -- The window is a cold start (first iteration wider than 1.5x the median of the others).
  is_cold BOOL,
  -- Device index; NULL for the host-side ledger of a capture without device activity.
  device LONG,
  -- Window start.
  window_ts TIMESTAMP,
  -- Window width: the buckets of a (window, device) sum to it exactly.
  window_dur DURATION,
  -- Bucket, e.g. busy.gemm, busy.comm_exposed, idle.sync, idle.dataloader, host.ops.
  bucket STRING,
  -- busy, idle or host.
  kind STRING,
  -- Time in the bucket.
  dur DURATION,
  -- Share of the window, %.
  pct DOUBLE,
  -- Start of the bucket's first segment in the window.
  first_ts TIMESTAMP,
  -- Separate segments of the bucket in the window.
  segment_count LONG
) AS
SELECT
  l.window_id,
  l.step,
  l.source,
  l.is_cold,
  l.device,
  l.window_ts,
  l.window_dur,
  l.bucket,
  l.kind,
  l.dur,
  round(100.0 * l.dur / l.window_dur, 2) AS pct,
  l.first_ts,
  l.segment_count
FROM kineto_ledger AS l
ORDER BY l.window_id, l.device, l.dur DESC, l.bucket;
