-- id: catalog.dataloader_workers_missing
-- version: 3
-- kind: detector
-- title: DataLoader worker traces missing: input-bound time visible only as next() latency
-- references: torch.profiler & HTA: the Framework View, "Fault catalog": minor fault "DataLoader worker
--   traces missing"
-- what: wide enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__ calls with nothing inside:
--   the batches are built in worker processes the profiler does not record, so the step only shows the wait.
-- confirming: next() time as a share of the step with the multiprocessing iterator; no dataset ops inside.
-- why: the step waits for batches built in worker processes the profiler does not record: the wait is real
--   step time, and its cause cannot be read from this trace. impact_dur is the ledger's DataLoader wait of the
--   step (device idle while the host sat in next(), or host.dataloader without device activity): the same
--   claim as catalog.input_bound, on the steps whose loader waits on workers (input_bound takes the others).
-- known_problems: a first step that waits for the workers to start; a loader that prefetches but is briefly
--   slowed by disk or network; both show as next() latency without being a missing-workers fault.
-- example: threshold_2
-- use_instead: profile a worker separately (py-spy dump/record on the worker pid, or a profiler inside
--   worker_init_fn) to see why it is slow; then more workers, prefetch_factor, cheaper per-sample work.
-- needs: steps
-- claims: idle.dataloader, host.dataloader
-- status: stable
-- default min_share_pct: 10

INCLUDE PERFETTO MODULE kineto.lib.dataloader_steps;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;

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
  -- Step time claimed: the ledger's DataLoader wait in the step.
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
WITH
  claimed AS (
    SELECT step, sum(claim_dur) AS claim_dur
    FROM kineto_ledger_claim('idle.dataloader, host.dataloader')
    WHERE
      source = 'profiler_step'
      AND NOT is_cold
    GROUP BY step
  )
SELECT
  d.ts,
  d.loader_dur AS dur,
  coalesce(c.claim_dur, 0) AS impact_dur,
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
LEFT JOIN claimed AS c
  USING (step)
WHERE
  d.iter_kind = 'workers'
  AND d.loader_pct >= $min_share_pct
ORDER BY d.ts;
