-- id: catalog.straggler_rank
-- version: 4
-- kind: detector
-- title: Straggler rank, seen from one rank: this rank waits in collectives far longer than it computes
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Straggler rank";
--   Reading order, step 5 (a distribution question)
-- what: one rank's compute is longer, so every other rank's collective wait is longer, every step.
--   From a single rank's trace that shows as collective wait several times the rank's own compute: a
--   slower peer holds the collective. Which rank is slow is a cross-rank decision: `kineto-sql ranks DIR`
--   (kineto_sql/fleet, queries/fleet/) compares the per-rank quantities and names the straggler.
-- confirming: per rank, per steady step: own work and collective wait (reading.rank_balance, the
--   definitions of kineto.lib.rank_balance), their ratio in the median step; the straggler is the rank with the longest own
--   work and the shortest wait (`kineto-sql ranks DIR`, or diagnose on the rank directory).
-- why: every rank waits in each collective for the slowest one: the slower rank's extra work becomes the
--   others' wait, every step. The rank is judged by its typical step (the median over the steady steps
--   of each step's wait-to-work and wait share, kineto_rank_balance_typical), not by sums over the steps:
--   one step stretched by a single slow op (a machine stall) adds its time to the rank's own work and
--   would pull a rank that waits in every other step under the floor. impact_dur is the time this rank
--   waited beyond its own work in each steady step, summed over them.
-- known_problems: a rank whose collectives carry real transfer time (large all-reduces on a slow link,
--   gloo on CPU) waits without a straggler; uneven work by design (pipeline stages) looks the same. One
--   trace cannot tell the two apart: diagnose on a rank directory keeps this finding only where the
--   cross-rank reading (the same two quantities compared across ranks) names another rank the straggler.
-- example: waiting_rank_fires_at_ratio_1
-- use_instead: data imbalance (variable sequence length) -> packing / length-sorted batching per rank; uneven
--   model partitioning -> rebalance; a slow host or GPU -> hardware check on the named rank.
-- needs: distributed
-- claims: idle.comm_wait, busy.comm_exposed, host.comm_wait
-- status: stable
-- catalog_row: major.straggler_rank
-- default min_wait_to_compute: 1.5
-- default min_wait_pct: 20

INCLUDE PERFETTO MODULE kineto.lib.rank_balance;
INCLUDE PERFETTO MODULE kineto.lib.rank_balance_typical;

-- One row for the whole capture of this rank (step NULL), with the per-step means, when the rank waits.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_straggler_rank(
  -- The rank fires when its collective wait is at least this many times its own work in its median
  -- steady step: a collective whose peers arrive together costs its transfer time, which on a balanced
  -- job is well under the compute it follows; waiting half as long again as it computes means a peer
  -- holds it (golden job: waiting ranks 1.9-2.5x, the straggler 0.7x, an even job 0.6-1.1x)
  min_wait_to_compute DOUBLE,
  -- And the wait is at least this % of the step time, in the median steady step.
  min_wait_pct DOUBLE
)
RETURNS TABLE(
  -- First steady step start.
  ts TIMESTAMP,
  -- From the first steady step start to the last one's end.
  dur DURATION,
  -- Step time this rank lost waiting beyond its own work, per step, summed over the steady steps.
  impact_dur DURATION,
  -- NULL: the row covers all steps of this rank.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- This trace's rank (the collectives' Rank arg), or NULL when they do not record it.
  rank LONG,
  -- Steady steps in the capture.
  step_count LONG,
  -- Mean step width.
  mean_step_dur DURATION,
  -- Mean own work per step and lane (kineto.lib.rank_balance).
  mean_compute_dur DURATION,
  -- Mean collective wait per step and lane (kineto.lib.rank_balance).
  mean_wait_dur DURATION,
  -- Median over the steady steps of each step's wait / own work (kineto_rank_balance_typical).
  wait_to_compute DOUBLE
) AS
WITH
  info AS (
    -- The rank as the collectives record it (args.Rank of nccl:* / record_param_comms ops, torch >= 2.1);
    -- distributedInfo is a top-level key the pasted UI session does not have, so it is not read here.
    SELECT (
      SELECT CAST(extract_arg(s.arg_set_id, 'args.Rank') AS INT)
      FROM slice AS s
      WHERE
        (s.name GLOB 'nccl:*' OR s.name = 'record_param_comms' OR s.name GLOB 'gloo:*')
        AND extract_arg(s.arg_set_id, 'args.Rank') IS NOT NULL
      LIMIT 1
    ) AS rank
  ),
  total AS (
    SELECT
      min(window_ts) AS ts,
      max(window_ts + window_dur) - min(window_ts) AS span,
      count(*) AS step_count,
      sum(window_dur) AS step_dur,
      sum(1.0 * wait_dur / lanes) AS wait_dur,
      sum(1.0 * own_work_dur / lanes) AS compute_dur,
      sum(1.0 * max(wait_dur - own_work_dur, 0) / lanes) AS beyond_dur
    FROM kineto_rank_balance
  )
SELECT
  t.ts,
  t.span AS dur,
  CAST(t.beyond_dur AS INT) AS impact_dur,
  NULL AS step,
  printf(
    '%s waits in collectives %.1fx its own work in its median steady step (the wait %.0f%% of that step; on average %.3f ms of wait and %.3f ms of own work per %.3f ms step): a slower peer holds the collective, or the transfer itself is slow; the cross-rank reading (diagnose or `kineto-sql ranks` on the rank directory) tells which and names the straggler (the rank with the longest own work and the shortest wait).',
    coalesce('Rank ' || (SELECT rank FROM info), 'This rank'),
    y.median_wait_to_work,
    y.median_wait_pct,
    t.wait_dur / 1e6 / t.step_count,
    t.compute_dur / 1e6 / t.step_count,
    t.step_dur / 1e6 / t.step_count
  ) AS evidence,
  (SELECT rank FROM info) AS rank,
  t.step_count,
  CAST(t.step_dur / t.step_count AS INT) AS mean_step_dur,
  CAST(t.compute_dur / t.step_count AS INT) AS mean_compute_dur,
  CAST(t.wait_dur / t.step_count AS INT) AS mean_wait_dur,
  round(y.median_wait_to_work, 3) AS wait_to_compute
FROM total AS t
JOIN kineto_rank_balance_typical AS y
WHERE
  t.step_count > 0
  AND y.median_wait_to_work >= $min_wait_to_compute
  AND y.median_wait_pct >= $min_wait_pct;
