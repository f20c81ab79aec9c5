-- id: catalog.exposed_communication
-- version: 3
-- kind: detector
-- title: Exposed communication: collectives (all_reduce, all_to_all, all_gather, reduce_scatter, send/recv, gloo) that nothing hides
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Unoverlapped DDP
--   all-reduce" (generalised to every collective)
-- what: NCCL / RCCL kernels running with no compute kernel beside them on any stream of the device, or
--   the host waiting inside a gloo / synchronous c10d collective while the device (or, on CPU, the step)
--   has nothing else to do.
-- confirming: the ledger's busy.comm_exposed + idle.comm_wait (host.comm_wait on CPU) per steady iteration
--   next to busy.comm_overlapped (collective time hidden under compute), and which collectives take it.
-- why: a collective that runs while no compute runs adds its whole duration to the step; under compute it
--   costs almost nothing. impact_dur is the ledger's busy.comm_exposed + idle.comm_wait + host.comm_wait
--   (reading.step_ledger). Time a rank waits for a slower rank inside a collective is in it too: the
--   cross-rank reading (kineto-sql ranks) says whether a straggler causes it.
-- known_problems: the last gradient bucket of DDP and the first all_gather of FSDP cannot overlap anything;
--   a single-GPU capture of a multi-rank job whose collectives are tiny (the share stays under the threshold).
-- example: all_to_all_alone
-- use_instead: overlap collectives with compute: DDP bucket_cap_mb / gradient_as_bucket_view / static_graph and no
--   stray no_sync() or manual all_reduce after backward; FSDP forward_prefetch / backward_prefetch;
--   async_op=True with work.wait() as late as possible; pipeline TorchRec's input_dist / all_to_all with the
--   dense part; fewer, larger messages; then check the achieved bus bandwidth against the network.
-- needs: none
-- claims: busy.comm_exposed, idle.comm_wait, host.comm_wait
-- status: preview
-- catalog_row: major.unoverlapped_allreduce
-- default min_share_pct: 5

INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;
INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;
INCLUDE PERFETTO MODULE kineto.lib.collectives;

-- Collective time by kind over the whole trace, largest first, as text (`all_to_all 81.2 ms, ...`).
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_exposed_communication_kinds(
  -- e.g. `all_to_all 81.235 ms, all_reduce 12.000 ms`.
  kinds STRING
) AS
WITH
  named AS (
    -- the collective as kineto.lib.collectives names it (RCCL's generic kernel by its stream annotation)
    SELECT
      coalesce(replace(collective, 'send_recv', 'send/recv'), 'other collective') AS kind,
      dur
    FROM kineto_collectives
  ),
  totals AS (
    SELECT kind, sum(dur) AS total FROM named GROUP BY kind ORDER BY total DESC, kind LIMIT 4
  )
SELECT group_concat(printf('%s %.3f ms', kind, total / 1e6), ', ') AS kinds
FROM totals;

-- One row per steady iteration whose exposed communication is at least min_share_pct of it.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_exposed_communication(
  -- Exposed communication share of the iteration that fires, % (5: where hiding it buys back more than
  -- ordinary step-to-step jitter).
  min_share_pct DOUBLE
)
RETURNS TABLE(
  -- Iteration start.
  ts TIMESTAMP,
  -- Iteration width.
  dur DURATION,
  -- Step time claimed: the ledger's exposed communication of the iteration.
  impact_dur DURATION,
  -- Iteration number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Claimed share of the iteration (per device, or of the host step), %.
  share_pct DOUBLE,
  -- Collective time hidden under compute in the iteration (busy.comm_overlapped).
  overlapped_dur DURATION,
  -- Collective kinds over the whole trace, largest first.
  collectives STRING
) AS
SELECT
  p.window_ts AS ts,
  p.window_dur AS dur,
  p.claim_dur AS impact_dur,
  p.step,
  printf(
    '%s %d: %.3f ms of communication runs with nothing to hide it (%.1f%% of the %.3f ms %s)%s; collectives in the trace: %s.',
    p.noun,
    p.step,
    p.claim_dur / 1e6,
    100.0 * p.claim_dur / (p.window_dur * p.lanes),
    p.window_dur / 1e6,
    lower(p.noun),
    CASE
      WHEN p.has_device THEN printf(', %.3f ms more is hidden under compute', w.comm_overlapped_dur / 1e6)
      ELSE ' (host-side collectives: gloo or a synchronous backend)'
    END,
    coalesce(k.kinds, 'none named')
  ) AS evidence,
  round(100.0 * p.claim_dur / (p.window_dur * p.lanes), 2) AS share_pct,
  w.comm_overlapped_dur AS overlapped_dur,
  k.kinds AS collectives
FROM kineto_ledger_claim('busy.comm_exposed, idle.comm_wait, host.comm_wait') AS p
JOIN kineto_ledger_windows AS w
  USING (window_id)
LEFT JOIN _kineto_catalog_exposed_communication_kinds AS k
  ON 1
WHERE
  NOT p.is_cold
  AND 100.0 * p.claim_dur / (p.window_dur * p.lanes) >= $min_share_pct
ORDER BY p.window_ts;
