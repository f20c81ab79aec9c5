-- id: catalog.input_bound
-- version: 1
-- kind: detector
-- title: Input-bound step: the step waits on a DataLoader that builds batches in the main process
-- source: seed 000 section 3, major fault "Input-bound step"
-- signature: ProfilerStep opens with a wide enumerate(DataLoader)#...__next__ frame while the GPU is empty;
--   the loading work (decode, augment) runs inside the call, in the profiled process.
-- confirming: DataLoader next() time as a share of the step, and the GPU busy share meanwhile (near 0).
-- cost: the step waits in next() while the main process decodes and augments: the GPU idles for that time
--   (impact_dur is the next() time not overlapped by device work).
-- false_positives: a first step that includes loader start-up; an iterable dataset that streams over the
--   network where the wait is I/O, not CPU work (the fix differs).
-- example: at_share_threshold_1
-- fix: DataLoader workers (num_workers > 0), prefetch_factor, pin_memory, pre-decoded / cached inputs;
--   move per-sample work off the training process.
-- needs: steps
-- status: stable
-- catalog_row: major.input_bound_step
-- default min_share_pct: 30
-- default max_gpu_busy_pct: 50
-- locked: 1 bc00a12fa5b78784
-- lib: lib.dataloader@2 lib.dataloader_steps@1 lib.device_busy@1 lib.event_categories@1 lib.kernels@2
--   lib.steps@3 lib.stream_busy@1
-- cases: at_share_threshold_1=7d28ab96 at_share_threshold_2=aa5485c1
--   leaves_worker_waits_to_workers_missing_1=d61a111d

INCLUDE PERFETTO MODULE kineto.lib.dataloader_steps;

-- One row per step whose in-process DataLoader next() takes at least min_share_pct of the step.
-- Waits on worker processes (_MultiProcessingDataLoaderIter) are catalog.dataloader_workers_missing.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_input_bound(
  -- Next() time at or above this % of the step fires (the fixed twin with prefetching workers stays under 1
  -- %, the planted main-process loader is above 60 %)
  min_share_pct DOUBLE,
  -- GPU busy above this % of the next() time means the load overlapped device work, which is not input-bound.
  max_gpu_busy_pct DOUBLE
)
RETURNS TABLE(
  -- First next() start.
  ts TIMESTAMP,
  -- Summed next() time.
  dur DURATION,
  -- Step time lost: the next() time the GPU was not busy.
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- next() share of the step, %.
  loader_pct DOUBLE,
  -- Where in the step the first next() started, % of the step.
  start_offset_pct DOUBLE,
  -- GPU busy during next(), % (NULL without GPU activity).
  gpu_busy_pct DOUBLE,
  -- DataLoader iterator kind: in_process or unknown.
  iter_kind STRING,
  -- next() calls in the step.
  call_count LONG
) AS
SELECT
  d.ts,
  d.loader_dur AS dur,
  CAST(d.loader_dur * (1.0 - coalesce(d.gpu_busy_pct, 0) / 100.0) AS INT) AS impact_dur,
  d.step,
  printf(
    'Step %d waits %.3f ms in DataLoader next() (%.1f%% of the %.3f ms step, %s), the batch built in the main process%s.',
    d.step,
    d.loader_dur / 1e6,
    d.loader_pct,
    d.step_dur / 1e6,
    CASE WHEN d.start_offset_pct <= 10 THEN 'opening the step' ELSE printf('starting %.0f%% into the step', d.start_offset_pct) END,
    CASE
      WHEN d.gpu_busy_pct IS NULL THEN ' (no GPU activity recorded)'
      ELSE printf('; GPU busy only %.1f%% of that time', d.gpu_busy_pct)
    END
  ) AS evidence,
  d.loader_pct,
  d.start_offset_pct,
  d.gpu_busy_pct,
  d.iter_kind,
  d.call_count
FROM kineto_dataloader_steps AS d
WHERE
  d.iter_kind != 'workers'
  AND d.loader_pct >= $min_share_pct
  AND coalesce(d.gpu_busy_pct, 0) <= $max_gpu_busy_pct
ORDER BY d.ts;
