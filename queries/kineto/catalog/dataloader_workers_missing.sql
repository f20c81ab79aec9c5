-- id: catalog.dataloader_workers_missing
-- version: 4
-- kind: detector
-- title: DataLoader worker traces missing: input-bound time visible only as next() latency
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, minor fault "DataLoader worker
--   traces missing"
-- what: wide enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__ calls with nothing inside:
--   the batches are built in worker processes the profiler does not record, so the step only shows the wait.
-- confirming: the ledger's DataLoader wait as a share of each iteration (ProfilerStep window, else an
--   inferred iteration or the whole capture) with the multiprocessing iterator; no dataset ops inside.
-- why: the step waits for batches built in worker processes the profiler does not record: the wait is real
--   step time, and its cause cannot be read from this trace. impact_dur is the ledger's DataLoader wait of the
--   iteration (device idle while the host sat in next(), or host.dataloader without device activity): the
--   same claim, measure and threshold as catalog.input_bound, on the iterations whose loader waits on
--   workers (input_bound takes the others). Both run on every kind of iteration window (ProfilerStep,
--   inferred, whole capture), so the wait input_bound hands over is always judged here: a capture without
--   a profiler schedule is no reason to drop it.
-- known_problems: a first step that waits for the workers to start; a loader that prefetches but is briefly
--   slowed by disk or network; both show as next() latency without being a missing-workers fault.
-- example: at_share_threshold_1
-- use_instead: profile a worker separately (py-spy dump/record on the worker pid, or a profiler inside
--   worker_init_fn) to see why it is slow; then more workers, prefetch_factor, cheaper per-sample work.
-- needs: none
-- claims: idle.dataloader, host.dataloader
-- status: stable
-- default min_share_pct: 5

INCLUDE PERFETTO MODULE kineto.lib.dataloader;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;

-- One row per steady iteration whose wait on DataLoader workers is at least min_share_pct of it.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_dataloader_workers_missing(
  -- DataLoader wait share of the iteration that fires, in %: the same measure and default as
  -- catalog.input_bound, which hands these iterations over (a prefetching loader that keeps up returns in
  -- well under 1 % of the step).
  min_share_pct DOUBLE
)
RETURNS TABLE(
  -- First next() start.
  ts TIMESTAMP,
  -- Summed next() time.
  dur DURATION,
  -- Step time claimed: the ledger's DataLoader wait in the iteration.
  impact_dur DURATION,
  -- Iteration number (N of ProfilerStep#N, else 1, 2, ... of the inferred windows).
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Claimed wait as % of the iteration.
  loader_pct DOUBLE,
  -- Device busy during next(), % of the next() time (NULL without device activity).
  gpu_busy_pct DOUBLE,
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
    SELECT window_id, claim_dur, has_device, lanes, window_dur, source, noun
    FROM kineto_ledger_claim('idle.dataloader, host.dataloader')
    WHERE
      NOT is_cold
  )
SELECT
  c.ts,
  c.loader_dur AS dur,
  l.claim_dur AS impact_dur,
  c.step,
  printf(
    '%s %d waits %.3f ms in DataLoader next() on worker processes the profiler did not record (%.1f%% of the %.3f ms %s%s): profile a worker (py-spy) to see why batches are late.',
    l.noun,
    c.step,
    c.loader_dur / 1e6,
    100.0 * l.claim_dur / (l.window_dur * l.lanes),
    l.window_dur / 1e6,
    CASE
      WHEN l.source = 'profiler_step' THEN 'step'
      WHEN l.source = 'capture' THEN 'capture'
      ELSE 'iteration'
    END,
    CASE WHEN l.has_device THEN printf(', the GPU idle for %.3f ms of it', l.claim_dur / 1e6) ELSE '' END
  ) AS evidence,
  round(100.0 * l.claim_dur / (l.window_dur * l.lanes), 2) AS loader_pct,
  CASE
    WHEN l.has_device THEN round(100.0 * max(c.loader_dur - l.claim_dur, 0) / c.loader_dur, 2)
  END AS gpu_busy_pct,
  c.call_count
FROM calls AS c
JOIN claimed AS l
  USING (window_id)
WHERE
  c.iter_kind = 'workers'
  AND l.claim_dur > 0
  AND 100.0 * l.claim_dur / (l.window_dur * l.lanes) >= $min_share_pct
ORDER BY c.ts;
