-- id: catalog.input_bound
-- version: 4
-- kind: detector
-- title: Input-bound step: the device (or, on CPU, the step) waits on the DataLoader for its next batch
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Input-bound step"
-- what: iterations open with a wide enumerate(DataLoader)#...__next__ while the GPU is empty; with an
--   in-process loader the decode / augment work runs inside the call.
-- confirming: the ledger's DataLoader wait (device idle while the host is in next()) as a share of each
--   iteration, the loader kind, and where in the iteration the wait sits.
-- why: the step waits in next() and the device runs dry meanwhile. impact_dur is the ledger's idle.dataloader
--   (device idle while the host sat in next(); reading.step_ledger) or, without device activity,
--   host.dataloader: exact, so the threshold only asks whether it is material. 5% is where a fix (workers,
--   prefetching, pinned memory) buys back more than ordinary step-to-step jitter; a loader that keeps up
--   returns in well under 1% of the step. Time the device was busy is never in the claim, so no device-busy
--   condition is needed. Iterations whose loader waits on worker processes are
--   catalog.dataloader_workers_missing's (same claim, other iterations).
-- known_problems: a first step that includes loader start-up (cold iterations are left out); an iterable
--   dataset that streams over the network where the wait is I/O, not CPU work (the fix differs).
-- example: at_share_threshold_1
-- use_instead: DataLoader workers (num_workers > 0), prefetch_factor, pin_memory, pre-decoded / cached inputs;
--   move per-sample work off the training process.
-- needs: none
-- claims: idle.dataloader, host.dataloader
-- status: stable
-- catalog_row: major.input_bound_step
-- default min_share_pct: 5

INCLUDE PERFETTO MODULE kineto.lib.dataloader;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;

-- One row per steady iteration whose DataLoader wait is at least min_share_pct of it.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_input_bound(
  -- DataLoader wait share of the iteration that fires, in % (material: above step jitter).
  min_share_pct DOUBLE
)
RETURNS TABLE(
  -- First next() start.
  ts TIMESTAMP,
  -- Summed next() time.
  dur DURATION,
  -- Step time claimed: the ledger's DataLoader wait in the iteration.
  impact_dur DURATION,
  -- Iteration number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Claimed wait as % of the iteration.
  loader_pct DOUBLE,
  -- Where in the iteration the first next() started, % of it.
  start_offset_pct DOUBLE,
  -- Device busy during next(), % of the next() time (NULL without device activity).
  gpu_busy_pct DOUBLE,
  -- DataLoader iterator kind of the longest call: in_process, workers or unknown.
  iter_kind STRING,
  -- next() calls in the iteration.
  call_count LONG
) AS
WITH
  placed AS (
    -- the window's step, not kineto_dataloader's own (ProfilerStep only: NULL on inferred windows)
    SELECT d.id, d.ts, d.dur, d.iter_kind, w.window_id, w.step
    FROM kineto_dataloader AS d
    JOIN kineto_window_of!(kineto_dataloader) AS w
      USING (id)
    WHERE
      NOT w.is_cold
  ),
  calls AS (
    SELECT
      window_id,
      step,
      min(ts) AS ts,
      sum(dur) AS loader_dur,
      count(*) AS call_count,
      (SELECT p2.iter_kind FROM placed AS p2 WHERE p2.window_id = p.window_id ORDER BY p2.dur DESC LIMIT 1)
        AS iter_kind
    FROM placed AS p
    GROUP BY window_id, step
  )
SELECT
  c.ts,
  c.loader_dur AS dur,
  l.claim_dur AS impact_dur,
  c.step,
  printf(
    '%s %d waits %.3f ms in DataLoader next() (%.1f%% of the %.3f ms %s, %s; %s loader)%s.',
    l.noun,
    c.step,
    c.loader_dur / 1e6,
    100.0 * l.claim_dur / (l.window_dur * l.lanes),
    l.window_dur / 1e6,
    lower(l.noun),
    CASE
      WHEN c.ts - l.window_ts <= l.window_dur / 10 THEN 'opening it'
      ELSE printf('starting %.0f%% into it', 100.0 * (c.ts - l.window_ts) / l.window_dur)
    END,
    CASE c.iter_kind
      WHEN 'in_process' THEN 'in-process'
      WHEN 'workers' THEN 'worker-process'
      ELSE 'unknown'
    END,
    CASE
      WHEN l.has_device THEN printf('; the GPU sat idle for %.3f ms of it', l.claim_dur / 1e6)
      ELSE ' (no device activity recorded)'
    END
  ) AS evidence,
  round(100.0 * l.claim_dur / (l.window_dur * l.lanes), 2) AS loader_pct,
  round(100.0 * (c.ts - l.window_ts) / l.window_dur, 2) AS start_offset_pct,
  CASE
    WHEN l.has_device THEN round(100.0 * max(c.loader_dur - l.claim_dur, 0) / c.loader_dur, 2)
  END AS gpu_busy_pct,
  c.iter_kind,
  c.call_count
FROM calls AS c
JOIN kineto_ledger_claim('idle.dataloader, host.dataloader') AS l
  USING (window_id)
WHERE
  NOT l.is_cold
  AND c.iter_kind != 'workers'
  AND l.claim_dur > 0
  AND 100.0 * l.claim_dur / (l.window_dur * l.lanes) >= $min_share_pct
ORDER BY c.ts;
