-- id: catalog.host_compute_gaps
-- version: 1
-- kind: detector
-- title: Host compute gaps: the GPU idles while the host runs Python, preprocessing or ATen CPU work
-- source: "torch.profiler & HTA: the Framework View", Reading order, step 3 (gap attribution)
-- signature: device idle stretches longer than a launch (over 100 us) with the host inside Python frames,
--   CPU ATen ops or the step itself, and no sync, copy, DataLoader, GC or launch to explain them; often the
--   stretch from the start of the step to its first kernel (preprocessing before the model runs).
-- confirming: the ledger's idle.host_compute per steady iteration, how much of it comes before the
--   iteration's first device activity, and what the host ran meanwhile (reading.step_ledger, the trace).
-- cost: the device has nothing queued while the host computes something that launches no kernel, so that
--   time is added to the step. impact_dur is the ledger's idle.host_compute (reading.step_ledger); the gap
--   before the first kernel of the iteration is part of it.
-- false_positives: a capture whose host spans are sparse (no with_stack, few ops) puts Python time here
--   that is really framework overhead between launches; a deliberate host phase (evaluation, logging,
--   checkpointing) inside a step is real but may be out of scope.
-- example: preprocessing_before_the_first_kernel
-- fix: move per-batch preprocessing off the step (DataLoader workers, GPU-side transforms), keep tensors on
--   the device (no CPU tensor math in the loop), overlap host work with device work (prefetch the next
--   batch, CUDA streams), and remove Python overhead with torch.compile or CUDA graphs.
-- needs: gpu
-- claims: idle.host_compute
-- status: preview
-- default min_share_pct: 5
-- locked: 1 b41144de4d9b5590
-- lib: lib.collectives@3 lib.dataloader@4 lib.device_busy@3 lib.event_categories@4 lib.gpu_idle@1
--   lib.host_slices@8 lib.host_tree@3 lib.internal_reads@1 lib.interval_merge@3 lib.iterations@6
--   lib.kernel_classes@3 lib.kernels@6 lib.launches@6 lib.ledger@8 lib.runtime_calls@4 lib.steps@9
--   lib.stream_busy@4 lib.thread_slices@2 lib.thread_track_slices@1
-- cases: preprocessing_before_the_first_kernel=6e4ea284 small_gap_is_silent=8f2d63a4

INCLUDE PERFETTO MODULE kineto.lib.ledger;

-- One row per steady iteration whose host-compute idle is at least min_share_pct of it.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_host_compute_gaps(
  -- Host-compute idle share of the iteration that fires, % (5: where moving the work buys back more
  -- than ordinary step-to-step jitter).
  min_share_pct DOUBLE
)
RETURNS TABLE(
  -- Iteration start.
  ts TIMESTAMP,
  -- Iteration width.
  dur DURATION,
  -- Step time claimed: the ledger's idle.host_compute of the iteration.
  impact_dur DURATION,
  -- Iteration number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Claimed share of the iteration (per device), %.
  share_pct DOUBLE,
  -- Device idle from the iteration start to its first device activity (NULL when none ran).
  lead_in_dur DURATION
) AS
WITH
  per_window AS (
    SELECT
      window_id,
      max(step) AS step,
      max(source) AS source,
      max(window_ts) AS ts,
      max(window_dur) AS dur,
      count(DISTINCT device) AS lanes,
      sum(CASE WHEN bucket = 'idle.host_compute' THEN dur ELSE 0 END) AS claim_dur,
      min(CASE WHEN kind = 'busy' THEN first_ts END) AS first_busy_ts
    FROM kineto_ledger
    WHERE
      NOT is_cold
      AND device IS NOT NULL
    GROUP BY window_id
  )
SELECT
  p.ts,
  p.dur,
  p.claim_dur AS impact_dur,
  p.step,
  printf(
    '%s %d: the GPU is idle %.3f ms (%.1f%% of the %.3f ms %s) while the host computes without launching (Python, preprocessing, ATen CPU work)%s.',
    CASE WHEN p.source = 'profiler_step' THEN 'Step' ELSE 'Iteration' END,
    p.step,
    p.claim_dur / 1e6,
    100.0 * p.claim_dur / (p.dur * p.lanes),
    p.dur / 1e6,
    CASE WHEN p.source = 'profiler_step' THEN 'step' ELSE 'iteration' END,
    CASE
      WHEN p.first_busy_ts IS NULL THEN '; no kernel ran in it'
      WHEN p.first_busy_ts - p.ts >= p.dur / 20
        THEN printf('; %.3f ms pass before its first kernel', (p.first_busy_ts - p.ts) / 1e6)
      ELSE ''
    END
  ) AS evidence,
  round(100.0 * p.claim_dur / (p.dur * p.lanes), 2) AS share_pct,
  p.first_busy_ts - p.ts AS lead_in_dur
FROM per_window AS p
WHERE
  100.0 * p.claim_dur / (p.dur * p.lanes) >= $min_share_pct
ORDER BY p.ts;
