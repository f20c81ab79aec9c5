-- id: catalog.host_composition
-- version: 2
-- kind: detector
-- title: Host composition on a CPU-only capture: ATen ops and Python outside them, the host's own work
-- references: Profiling in PyTorch: A Beginner's Guide to torch.profiler, "Identifying Bottlenecks:
--   Overhead-Bound vs. Compute-Bound"
-- what: a capture without device activity whose steady step is the host's own work: time inside
--   ATen ops (host.ops) and Python outside them (host.python) of the step-time ledger.
-- confirming: the two shares of the steady step (reading.step_ledger); the verdict's overhead- or
--   compute-bound reading (guide.overhead_vs_compute: the share of outermost ATen calls under 50 us).
-- why: on a CPU-only capture the host is the whole step, so these buckets are step time; they are the
--   work itself, not time lost, so the finding is informational (max_severity info) and ranks after every
--   fault. impact_dur is the buckets' steady time; diagnose claims it last (`rest of`), after the rules that
--   explain part of it (catalog.small_op_storm, catalog.implicit_dtype_casts, ...).
-- known_problems: none as a fault: it describes the step. A large Python share on a with_stack capture is
--   partly the tracer's own cost (catalog.with_stack_overhead).
-- example: python_heavy_loop
-- use_instead: Python outside ops leading (overhead-bound): vectorize Python loops into tensor ops, fuse small ops
--   (torch.compile), give each op more work; ATen ops leading with large calls (compute-bound): less or
--   cheaper work per op, a lower precision, more intra-op threads (torch.set_num_threads).
-- needs: none
-- claims: rest of host.ops, rest of host.python
-- status: preview
-- default min_share_pct: 5

INCLUDE PERFETTO MODULE kineto.lib.ledger;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim_buckets;
INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;

-- One row per host-only lane whose ATen + Python share is at least min_share_pct.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_host_composition(
  -- ATen + Python share of the steady step that fires, % (5: the share diagnose expects a finding for).
  min_share_pct DOUBLE
)
RETURNS TABLE(
  -- First steady window start.
  ts TIMESTAMP,
  -- From the first steady window start to the last one's end.
  dur DURATION,
  -- Step time held: host.ops + host.python in the steady windows.
  impact_dur DURATION,
  -- NULL: the row covers every steady window.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- host.ops share of the steady step, %.
  ops_pct DOUBLE,
  -- host.python share of the steady step, %.
  python_pct DOUBLE,
  -- The fix for the share that leads.
  fix STRING,
  -- Always info: the host's own work is no fault.
  max_severity STRING
) AS
WITH
  -- every steady host-only lane's time: the shares' denominator (the ledger itself, not the claim)
  steady AS (
    SELECT
      upid,
      min(window_ts) AS ts,
      max(window_ts + window_dur) AS end_ts,
      sum(dur) AS lane_dur
    FROM kineto_ledger
    WHERE
      NOT is_cold
      AND device IS NULL
    GROUP BY upid
  ),
  -- the claim (the header's claims line) on those lanes, split into its two buckets
  claimed AS (
    SELECT
      w.upid,
      sum(CASE WHEN c.bucket = 'host.ops' THEN c.dur ELSE 0 END) AS ops_dur,
      sum(CASE WHEN c.bucket = 'host.python' THEN c.dur ELSE 0 END) AS python_dur
    FROM kineto_ledger_claim_buckets('rest of host.ops, rest of host.python') AS c
    JOIN kineto_ledger_windows AS w
      USING (window_id)
    WHERE
      NOT c.is_cold
      AND c.device IS NULL
    GROUP BY w.upid
  ),
  lanes AS (
    SELECT s.*, coalesce(c.ops_dur, 0) AS ops_dur, coalesce(c.python_dur, 0) AS python_dur
    FROM steady AS s
    LEFT JOIN claimed AS c
      USING (upid)
  )
SELECT
  l.ts,
  l.end_ts - l.ts AS dur,
  l.ops_dur + l.python_dur AS impact_dur,
  NULL AS step,
  printf(
    'No device activity: ATen ops take %.1f%% of the steady step time and Python outside them %.1f%%; the host''s own work is the step.',
    100.0 * l.ops_dur / max(l.lane_dur, 1),
    100.0 * l.python_dur / max(l.lane_dur, 1)
  ) AS evidence,
  round(100.0 * l.ops_dur / max(l.lane_dur, 1), 2) AS ops_pct,
  round(100.0 * l.python_dur / max(l.lane_dur, 1), 2) AS python_pct,
  CASE
    WHEN l.python_dur > l.ops_dur
      THEN 'Python outside the ops leads: vectorize Python loops into tensor ops, remove per-step Python work, fuse small ops (torch.compile).'
    ELSE 'ATen ops lead: read guide.overhead_vs_compute; many small calls want fusion and batching (torch.compile), large calls less or cheaper work per op, a lower precision or more intra-op threads (torch.set_num_threads).'
  END AS fix,
  'info' AS max_severity
FROM lanes AS l
WHERE
  100.0 * (l.ops_dur + l.python_dur) / max(l.lane_dur, 1) >= $min_share_pct
ORDER BY l.upid;
