-- id: catalog.dataloader_workers_missing
-- version: 1
-- kind: detector
-- title: DataLoader worker traces missing: input-bound time visible only as next() latency
-- source: seed 000 section 3, minor fault "DataLoader worker traces missing"
-- signature: wide enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__ calls with nothing inside:
--   the batches are built in worker processes the profiler does not record, so the step only shows the wait.
-- confirming: next() time as a share of the step with the multiprocessing iterator; no dataset ops inside.
-- cost: the step waits for batches built in worker processes the profiler does not record: the wait is real
--   step time (impact_dur is the next() time), and its cause cannot be read from this trace.
-- false_positives: a first step that waits for the workers to start; a loader that prefetches but is briefly
--   slowed by disk or network; both show as next() latency without being a missing-workers fault.
-- example: threshold_2
-- fix: profile a worker separately (py-spy dump/record on the worker pid, or a profiler inside
--   worker_init_fn) to see why it is slow; then more workers, prefetch_factor, cheaper per-sample work.
-- needs: steps
-- status: stable
-- default min_share_pct: 10
-- locked: 1 60bec45c09133709
-- lib: lib.dataloader@2 lib.dataloader_steps@1 lib.device_busy@1 lib.event_categories@1 lib.kernels@2
--   lib.steps@3 lib.stream_busy@1
-- cases: input_bound_leaves_worker_waits_to_workers_missing_2=95e4c291 threshold_1=cf16ecbc
--   threshold_2=e1e92e75

INCLUDE PERFETTO MODULE kineto.lib.dataloader_steps;

-- One row per step whose wait on DataLoader workers takes at least min_share_pct of the step.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_dataloader_workers_missing(
  -- Next() waits at or above this % of the step fire (a prefetching loader that keeps up returns in well
  -- under 1 % of the step)
  min_share_pct DOUBLE
)
RETURNS TABLE(
  -- First next() start.
  ts TIMESTAMP,
  -- Summed next() time.
  dur DURATION,
  -- Step time lost waiting for workers: the summed next() time.
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- next() share of the step, %.
  loader_pct DOUBLE,
  -- GPU busy during next(), % (NULL without GPU activity).
  gpu_busy_pct DOUBLE,
  -- next() calls in the step.
  call_count LONG
) AS
SELECT
  d.ts,
  d.loader_dur AS dur,
  d.loader_dur AS impact_dur,
  d.step,
  printf(
    'Step %d waits %.3f ms (%.1f%% of the step) in DataLoader next() on worker processes the profiler did not record: profile a worker (py-spy) to see why batches are late.',
    d.step,
    d.loader_dur / 1e6,
    d.loader_pct
  ) AS evidence,
  d.loader_pct,
  d.gpu_busy_pct,
  d.call_count
FROM kineto_dataloader_steps AS d
WHERE
  d.iter_kind = 'workers'
  AND d.loader_pct >= $min_share_pct
ORDER BY d.ts;
