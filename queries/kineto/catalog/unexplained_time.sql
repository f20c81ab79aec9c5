-- id: catalog.unexplained_time
-- version: 3
-- kind: detector
-- title: Step time the specific detectors leave unexplained, by ledger bucket: what it is and what to try first
-- references: torch.profiler & HTA: the Framework View, "Reading order" step 3 (gap attribution: every GPU
--   gap gets a cause), read from reading.step_ledger
-- what: a steady idle bucket of the step-time ledger (device idle while the host issues launches,
--   computes, waits), or a host-side wait on a CPU-only capture, that holds 5% or more of the steady step
--   time and that no specific detector claimed, or claimed only in part. A CPU-only capture's own work
--   (host.ops, host.python) is not lost time: catalog.host_composition describes it.
-- confirming: the bucket's share of the steady step (reading.step_ledger, the verdict's sentence names the
--   largest), and the host timeline inside the bucket's segments.
-- why: every bucket is step time (the ledger puts every nanosecond of every window in one). impact_dur is
--   the bucket's steady time; diagnose claims it last (`rest of`), after every specific detector, so this
--   finding holds only what none of them explained, and the verdict's largest cause always has a finding.
--   Buckets under min_share_pct are summed in one row next to them, so no leftover idle time is left
--   without a claim; with no bucket at min_share_pct the rule is silent.
-- known_problems: each bucket's row names its bucket (claim_bucket): where a specific detector claimed all
--   of it, the row is no evidence of this finding, and when every row's bucket was claimed so, the finding
--   has nothing left to explain and is silent in diagnose (`kineto-sql run` still lists the buckets). A
--   specific detector whose gate was not met (a queue too long for catalog.small_op_storm, a GC pass under
--   catalog.gc_gil_stall's floor) leaves its bucket here with the default reading, which is coarser than
--   the detector's; idle.unattributed on a capture that recorded no host events says only
--   that nothing was recorded.
-- example: launch_bucket_without_a_storm
-- use_instead: the default fix of the bucket (kineto.lib.ledger_buckets): launch-bound idle wants fusion and CUDA
--   graphs (torch.compile mode="reduce-overhead"), host compute wants the work moved off the step, waits
--   want the wait removed; each row carries its bucket's.
-- needs: none
-- claims: rest of idle.*, rest of host.sync_read, rest of host.comm_wait, rest of host.dataloader, rest of host.gc,
--   rest of host.profiler, rest of host.unattributed
-- status: preview
-- default min_share_pct: 5

INCLUDE PERFETTO MODULE kineto.lib.ledger;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim_buckets;
INCLUDE PERFETTO MODULE kineto.lib.ledger_buckets;

-- One row per steady idle / host bucket of at least min_share_pct, and one for the smaller ones together.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_unexplained_time(
  -- A bucket's share of the steady step time (every steady lane) that gets its own row, % (5: the share
  -- diagnose expects a finding for; what ordinary step-to-step jitter does not reach).
  min_share_pct DOUBLE
)
RETURNS TABLE(
  -- First steady window start.
  ts TIMESTAMP,
  -- From the first steady window start to the last one's end.
  dur DURATION,
  -- The bucket's steady time (diagnose keeps what no specific detector claimed).
  impact_dur DURATION,
  -- NULL: the row covers every steady window.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Ledger bucket, or NULL for the row of the buckets under min_share_pct.
  bucket STRING,
  -- Its share of the steady step time, %.
  share_pct DOUBLE,
  -- The bucket's default fix.
  fix STRING,
  -- The bucket the row's impact is drawn from (NULL for the row of the smaller buckets): diagnose gives the
  -- row only what the specific findings left of that bucket, and a row left nothing is not this
  -- finding's evidence (its words would name a cause another finding explains).
  claim_bucket STRING
) AS
WITH
  -- every steady lane's time: the shares' denominator (the ledger itself, not the claim)
  span AS (
    SELECT min(window_ts) AS ts, max(window_ts + window_dur) AS end_ts, sum(dur) AS lane_dur,
      max(source) AS source
    FROM kineto_ledger
    WHERE
      NOT is_cold
  ),
  buckets AS (
    SELECT
      s.bucket,
      sum(s.dur) AS bucket_dur,
      100.0 * sum(s.dur) / (SELECT lane_dur FROM span) AS share_pct
    -- the claim's buckets (the header's claims line) in the steady windows
    FROM kineto_ledger_claim_buckets('rest of idle.*, rest of host.sync_read, rest of host.comm_wait, rest of host.dataloader, rest of host.gc, rest of host.profiler, rest of host.unattributed') AS s
    WHERE
      NOT s.is_cold
    GROUP BY s.bucket
  ),
  big AS (
    SELECT b.*, w.words, w.fix FROM buckets AS b
    LEFT JOIN kineto_ledger_buckets AS w
      USING (bucket)
    WHERE
      b.share_pct >= $min_share_pct
  ),
  small AS (
    SELECT count(*) AS n, sum(bucket_dur) AS bucket_dur, 100.0 * sum(bucket_dur) / (SELECT lane_dur FROM span) AS share_pct
    FROM buckets
    WHERE
      share_pct < $min_share_pct
  )
SELECT
  sp.ts,
  sp.end_ts - sp.ts AS dur,
  b.bucket_dur AS impact_dur,
  NULL AS step,
  printf(
    '%.1f%% of the steady step time (%.3f ms over the steady %s) is %s (%s), and no more specific finding explains all of it.',
    b.share_pct,
    b.bucket_dur / 1e6,
    CASE WHEN sp.source = 'profiler_step' THEN 'steps' ELSE 'iterations' END,
    coalesce(b.words, b.bucket),
    b.bucket
  ) AS evidence,
  b.bucket,
  round(b.share_pct, 2) AS share_pct,
  b.fix,
  b.bucket AS claim_bucket
FROM big AS b, span AS sp
UNION ALL
SELECT
  sp.ts,
  sp.end_ts - sp.ts,
  sm.bucket_dur,
  NULL,
  printf('%d smaller idle / wait buckets, each under %.0f%%, hold %.1f%% of the steady step time together.', sm.n, $min_share_pct, sm.share_pct),
  NULL,
  round(sm.share_pct, 2),
  NULL,
  NULL
FROM small AS sm, span AS sp
WHERE
  sm.bucket_dur > 0
  AND EXISTS (SELECT 1 FROM big)
ORDER BY impact_dur DESC;
