-- id: catalog.blocking_copy
-- version: 5
-- kind: detector
-- title: Blocking copy in the hot loop: the host waits in a memory copy while the device runs dry
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Sync-forcing op in hot
--   loop" (its copy form)
-- what: cudaMemcpy / cudaMemcpy2D / hipMemcpy / hipMemcpyWithStream, or cudaMemcpyAsync whose copy
--   reads or writes pageable host memory (`Memcpy DtoH (Device -> Pageable)`, `Memcpy HtoD (Pageable ->
--   Device)`) or that returned only after its own copy finished, under aten::to / aten::copy_ / .cpu().
-- confirming: per steady iteration the blocking copies, their direction and memory kind, the host time in
--   them, and the ledger's idle.blocking_copy (device idle while the host sat in them).
-- why: a DtoH copy into pageable memory returns only after the copy completed, and a pageable HtoD copy
--   first synchronizes the stream (CUDA runtime, API synchronization behavior): the host stops issuing work
--   and the device drains. impact_dur is the ledger's idle.blocking_copy (reading.step_ledger): only the
--   device idle that overlaps the waits (kineto.lib.runtime_calls decides which calls block).
-- known_problems: one small copy per step to log a value is cheap on a long step (the claim stays small);
--   a copy the algorithm needs on the host right away (a data-dependent shape) cannot be deferred, only
--   made faster with pinned memory.
-- example: pageable_dtoh_blocks
-- use_instead: pinned memory and non_blocking copies: DataLoader(pin_memory=True) and .to(device, non_blocking=True)
--   for inputs; for values read back, copy into a pinned buffer with non_blocking=True and read it a step
--   later (or after a CUDA event), instead of .cpu() / .item() on the hot path.
-- needs: gpu
-- claims: idle.blocking_copy
-- status: preview
-- default min_per_step: 1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.enclosing_op;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;

-- One row per steady iteration holding at least `min_per_step` blocking copies.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_blocking_copy(
  -- An iteration fires with at least this many blocking copies.
  min_per_step LONG
)
RETURNS TABLE(
  -- First blocking copy of the iteration.
  ts TIMESTAMP,
  -- From the first to the end of the last.
  dur DURATION,
  -- Step time claimed: the ledger's idle.blocking_copy of the iteration.
  impact_dur DURATION,
  -- Iteration number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Blocking copies in the iteration.
  copy_count LONG,
  -- Of them into or out of pageable host memory.
  pageable_count LONG,
  -- Directions seen, e.g. `DtoH x10, HtoD x2`.
  directions STRING,
  -- Host time inside the calls.
  blocked_dur DURATION,
  -- Iteration width.
  step_dur DURATION,
  -- The ops that issued them, with counts.
  ops STRING,
  -- The fix for what was found.
  fix STRING
) AS
WITH
  copies AS (
    SELECT r.id, r.upid, r.ts, r.dur, r.name, r.copy_direction, r.pageable
    FROM kineto_runtime_calls AS r
    WHERE
      r.class = 'blocking_copy'
  ),
  -- read by three CTEs below: placed once (a CTE read more than once is otherwise run again by each)
  placed AS MATERIALIZED (
    SELECT
      c.*,
      w.window_id,
      w.step,
      coalesce(
        (SELECT s.name FROM slice AS s WHERE s.id = kineto_enclosing_op!(c.id, FALSE, FALSE)),
        c.name
      ) AS op_name
    FROM copies AS c
    JOIN kineto_window_of!(copies) AS w
      USING (id)
    WHERE
      NOT w.is_cold
  ),
  op_text AS (
    SELECT window_id, group_concat(op_name || ' x' || n, ', ') AS ops
    FROM (
      SELECT window_id, op_name, count(*) AS n FROM placed GROUP BY 1, 2 ORDER BY n DESC, op_name
    )
    GROUP BY window_id
  ),
  dir_text AS (
    SELECT window_id, group_concat(d || ' x' || n, ', ') AS directions
    FROM (
      SELECT window_id, coalesce(copy_direction, name) AS d, count(*) AS n
      FROM placed
      GROUP BY 1, 2
      ORDER BY n DESC, d
    )
    GROUP BY window_id
  ),
  -- the claim read once: a table function on the inner side of a join runs again per outer row
  claim AS MATERIALIZED (
    SELECT window_id, noun, window_dur, claim_dur FROM kineto_ledger_claim('idle.blocking_copy')
  ),
  per_window AS MATERIALIZED (
    SELECT
      window_id,
      step,
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS dur,
      count(*) AS copy_count,
      sum(coalesce(pageable, 0)) AS pageable_count,
      sum(copy_direction = 'DtoH') AS dtoh_count,
      sum(copy_direction = 'HtoD') AS htod_count,
      sum(dur) AS blocked_dur
    FROM placed
    GROUP BY window_id, step
  )
SELECT
  p.ts,
  p.dur,
  c.claim_dur AS impact_dur,
  p.step,
  printf(
    '%s %d: %d blocking copies (%s; %d pageable) from %s; the host waited %.3f ms and the GPU sat idle %.3f ms of it (%.1f%% of the %.3f ms %s).',
    c.noun,
    p.step,
    p.copy_count,
    d.directions,
    p.pageable_count,
    o.ops,
    p.blocked_dur / 1e6,
    c.claim_dur / 1e6,
    100.0 * c.claim_dur / c.window_dur,
    c.window_dur / 1e6,
    lower(c.noun)
  ) AS evidence,
  p.copy_count,
  p.pageable_count,
  d.directions,
  p.blocked_dur,
  c.window_dur AS step_dur,
  o.ops,
  CASE
    WHEN p.dtoh_count >= p.htod_count AND p.pageable_count > 0 THEN
      'Read device values back asynchronously: copy into a pinned buffer (torch.empty(..., pin_memory=True)) with non_blocking=True and read it a step later or after a CUDA event, instead of .cpu() / .item() / .tolist() on the hot path.'
    WHEN p.pageable_count > 0 THEN
      'Pin host inputs: DataLoader(pin_memory=True) (or tensor.pin_memory()) and .to(device, non_blocking=True): a pageable host-to-device copy synchronizes the stream first.'
    ELSE
      'Replace the synchronous copy (cudaMemcpy / hipMemcpy / hipMemcpyWithStream) with an asynchronous copy on a stream from pinned host memory, and wait for it only where the value is needed.'
  END AS fix
FROM per_window AS p
JOIN claim AS c
  USING (window_id)
LEFT JOIN op_text AS o
  USING (window_id)
LEFT JOIN dir_text AS d
  USING (window_id)
WHERE
  p.copy_count >= $min_per_step
  AND c.claim_dur > 0
ORDER BY p.ts;
