-- id: catalog.input_bound
-- version: 3
-- kind: detector
-- title: Input-bound step: the device (or, on CPU, the step) waits on the DataLoader for its next batch
-- source: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Input-bound step"
-- signature: iterations open with a wide enumerate(DataLoader)#...__next__ while the GPU is empty; with an
--   in-process loader the decode / augment work runs inside the call.
-- confirming: the ledger's DataLoader wait (device idle while the host is in next()) as a share of each
--   iteration, the loader kind, and where in the iteration the wait sits.
-- cost: the step waits in next() and the device runs dry meanwhile. impact_dur is the ledger's idle.dataloader
--   (device idle while the host sat in next(); reading.step_ledger) or, without device activity,
--   host.dataloader: exact, so the threshold only asks whether it is material. 5% is where a fix (workers,
--   prefetching, pinned memory) buys back more than ordinary step-to-step jitter; a loader that keeps up
--   returns in well under 1% of the step. Time the device was busy is never in the claim, so no device-busy
--   condition is needed. Iterations whose loader waits on worker processes are
--   catalog.dataloader_workers_missing's (same claim, other iterations).
-- false_positives: a first step that includes loader start-up (cold iterations are left out); an iterable
--   dataset that streams over the network where the wait is I/O, not CPU work (the fix differs).
-- example: at_share_threshold_1
-- fix: DataLoader workers (num_workers > 0), prefetch_factor, pin_memory, pre-decoded / cached inputs;
--   move per-sample work off the training process.
-- needs: none
-- claims: idle.dataloader, host.dataloader
-- status: stable
-- catalog_row: major.input_bound_step
-- default min_share_pct: 5
-- locked: 3 24bdd498682f26f5
-- lib: lib.collectives@3 lib.dataloader@4 lib.device_busy@3 lib.event_categories@4 lib.gpu_idle@1
--   lib.host_slices@8 lib.host_tree@3 lib.internal_reads@1 lib.interval_merge@3 lib.iterations@6
--   lib.kernel_classes@3 lib.kernels@6 lib.launches@6 lib.ledger@8 lib.runtime_calls@4 lib.steps@9
--   lib.stream_busy@4 lib.thread_slices@2 lib.thread_track_slices@1 lib.window_of@1
-- cases: at_share_threshold_1=fdbe115d at_share_threshold_2=f9b12071
--   quarter_of_the_step_with_an_idle_gpu=c602b65f leaves_worker_waits_to_workers_missing_1=d61a111d
--   inferred_iterations_print_their_own_index=895a8190

INCLUDE PERFETTO MODULE kineto.lib.dataloader;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger;

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
  ),
  claimed AS (
    SELECT
      window_id,
      sum(CASE WHEN bucket IN ('idle.dataloader', 'host.dataloader') THEN dur ELSE 0 END) AS claim_dur,
      max(device IS NOT NULL) AS has_device,
      count(DISTINCT coalesce(device, -1)) AS lanes,
      max(window_ts) AS window_ts,
      max(window_dur) AS window_dur,
      max(source) AS source
    FROM kineto_ledger
    WHERE
      NOT is_cold
    GROUP BY window_id
  )
SELECT
  c.ts,
  c.loader_dur AS dur,
  l.claim_dur AS impact_dur,
  c.step,
  printf(
    '%s %d waits %.3f ms in DataLoader next() (%.1f%% of the %.3f ms %s, %s; %s loader)%s.',
    CASE WHEN l.source = 'profiler_step' THEN 'Step' ELSE 'Iteration' END,
    c.step,
    c.loader_dur / 1e6,
    100.0 * l.claim_dur / (l.window_dur * l.lanes),
    l.window_dur / 1e6,
    CASE WHEN l.source = 'profiler_step' THEN 'step' ELSE 'iteration' END,
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
JOIN claimed AS l
  USING (window_id)
WHERE
  c.iter_kind != 'workers'
  AND l.claim_dur > 0
  AND 100.0 * l.claim_dur / (l.window_dur * l.lanes) >= $min_share_pct
ORDER BY c.ts;
