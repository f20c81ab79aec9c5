-- id: catalog.host_compute_gaps
-- version: 3
-- kind: detector
-- title: Host compute gaps: the GPU idles while the host runs Python, preprocessing or ATen CPU work
-- references: "torch.profiler & HTA: the Framework View", Reading order, step 3 (gap attribution)
-- what: device idle stretches longer than a launch (over 100 us) with the host inside Python frames,
--   CPU ATen ops or the step itself, no launching op on the host stack, and no sync, copy, DataLoader, GC
--   or launch to explain them; often the stretch from the start of the step to its first kernel
--   (preprocessing before the model runs).
-- confirming: the ledger's idle.host_compute per steady iteration, how much of it comes before the
--   iteration's first device activity, and what the host ran meanwhile (reading.step_ledger, the trace).
-- why: the device has nothing queued while the host computes something that launches no kernel, so that
--   time is added to the step. impact_dur is the ledger's idle.host_compute (reading.step_ledger); the gap
--   before the first kernel of the iteration is part of it. A gap whose host stack holds an op that goes on
--   to launch (aten::linear before its addmm's launch), or a compiled region's wrapper between its
--   launches (torch.compile's Torch-Compiled Region, AOTAutograd's CompiledFunction, Inductor's
--   CompiledFxGraph call), is the cost of issuing kernels: the ledger puts it in idle.launch
--   (catalog.small_op_storm, catalog.unexplained_time), whose fix is fusion and CUDA graphs, not this one.
-- known_problems: a capture whose host spans are sparse (no with_stack, few ops) puts Python time here
--   that is really framework overhead between launches (Python between two ops, with no op open, is
--   counted as host compute); a deliberate host phase (evaluation, logging, checkpointing) inside a step is
--   real but may be out of scope.
-- example: preprocessing_before_the_first_kernel
-- use_instead: move per-batch preprocessing off the step (DataLoader workers, GPU-side transforms), keep
--   tensors on the device (no CPU tensor math in the loop), and overlap host work with device work (prefetch
--   the next batch, CUDA streams).
-- needs: gpu
-- claims: idle.host_compute
-- status: preview
-- default min_share_pct: 5

INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;
INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;

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
SELECT
  p.window_ts AS ts,
  p.window_dur AS dur,
  p.claim_dur AS impact_dur,
  p.step,
  printf(
    '%s %d: the GPU is idle %.3f ms (%.1f%% of the %.3f ms %s) while the host computes without launching (Python, preprocessing, ATen CPU work)%s.',
    p.noun,
    p.step,
    p.claim_dur / 1e6,
    100.0 * p.claim_dur / (p.window_dur * p.lanes),
    p.window_dur / 1e6,
    lower(p.noun),
    CASE
      WHEN w.first_busy_ts IS NULL THEN '; no kernel ran in it'
      WHEN w.first_busy_ts - p.window_ts >= p.window_dur / 20
        THEN printf('; %.3f ms pass before its first kernel', (w.first_busy_ts - p.window_ts) / 1e6)
      ELSE ''
    END
  ) AS evidence,
  round(100.0 * p.claim_dur / (p.window_dur * p.lanes), 2) AS share_pct,
  w.first_busy_ts - p.window_ts AS lead_in_dur
FROM kineto_ledger_claim('idle.host_compute') AS p
JOIN kineto_ledger_windows AS w
  USING (window_id)
WHERE
  NOT p.is_cold
  AND p.has_device
  AND 100.0 * p.claim_dur / (p.window_dur * p.lanes) >= $min_share_pct
ORDER BY p.window_ts;
