-- id: catalog.straggler_rank
-- version: 2
-- kind: detector
-- title: Straggler rank, seen from one rank: this rank waits in collectives far longer than it computes
-- source: seed 000 section 3, major fault "Straggler rank"; seed section 2 step 5 (a distribution question)
-- signature: one rank's compute is longer, so every other rank's collective wait is longer, every step.
--   From a single rank's trace that shows as collective wait several times the rank's own compute: a
--   slower peer holds the collective. Which rank is slow is a cross-rank decision: `kineto-sql ranks DIR`
--   (kineto_sql/ranks.py) compares the per-rank quantities and names the straggler.
-- confirming: per rank, per step: compute time, collective wait time, their ratio (HTA temporal breakdown
--   per rank); the straggler is the rank with the longest compute and the shortest wait.
-- cost: every rank waits in each collective for the slowest one: the slower rank's extra compute becomes the
--   others' wait, every step. impact_dur is the time this rank waited beyond its own compute.
-- false_positives: a rank whose collectives also carry real transfer time (large all-gathers on a slow link)
--   waits without a straggler; uneven work by design (pipeline stages) looks the same.
-- example: waiting_rank_fires_at_ratio_1
-- fix: data imbalance (variable sequence length) -> packing / length-sorted batching per rank; uneven
--   model partitioning -> rebalance; a slow host or GPU -> hardware check on the named rank.
-- needs: steps, cpu_ops, distributed
-- claims: idle.comm_wait, busy.comm_exposed, host.comm_wait
-- status: stable
-- catalog_row: major.straggler_rank
-- default min_wait_to_compute: 1.5
-- default min_wait_pct: 20
-- locked: 2 d15a9daa512f1ec2
-- lib: lib.collectives@1 lib.cpu_ops@3 lib.event_categories@2 lib.host_slices@1 lib.host_tree@1 lib.kernels@2
--   lib.launches@4 lib.runtime_calls@3 lib.steps@3
-- cases: waiting_rank_fires_at_ratio_1=2370340d waiting_rank_fires_at_ratio_2=c3c255b5

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.collectives;

-- One row for the whole capture of this rank (step NULL), with the per-step means, when the rank waits.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_straggler_rank(
  -- The rank fires when its collective wait is at least this many times its own compute, summed over the
  -- steps (golden job: waiting ranks 1.6-2.1x, the straggler 0.6x, an even job 0.8-1.3x)
  min_wait_to_compute DOUBLE,
  -- And the wait is at least this % of the step time.
  min_wait_pct DOUBLE
)
RETURNS TABLE(
  -- First step start.
  ts TIMESTAMP,
  -- From the first step start to the last step end.
  dur DURATION,
  -- Step time this rank lost waiting beyond its own compute, summed over the steps.
  impact_dur DURATION,
  -- NULL: the row covers all steps of this rank.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- This trace's rank (the collectives' Rank arg), or NULL when they do not record it.
  rank LONG,
  -- Steps in the capture.
  step_count LONG,
  -- Mean step width.
  mean_step_dur DURATION,
  -- Mean compute per step: GPU compute-kernel time, or on CPU traces the top-level ATen op time outside
  -- collectives.
  mean_compute_dur DURATION,
  -- Mean collective wait per step (communication kernels, or gloo / collective ops).
  mean_wait_dur DURATION,
  -- mean_wait_dur / mean_compute_dur.
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
  has_kernels AS (
    SELECT EXISTS (SELECT 1 FROM kineto_collectives WHERE source = 'kernel') AS yes
  ),
  wait AS (
    SELECT step, sum(dur) AS wait_dur
    FROM kineto_collectives
    WHERE
      step IS NOT NULL
    GROUP BY step
  ),
  gpu_compute AS (
    SELECT l.step, sum(k.dur) AS compute_dur
    FROM kineto_kernels AS k
    JOIN kineto_launches AS l
      ON l.correlation = k.correlation
    WHERE
      k.class = 'compute'
      AND l.step IS NOT NULL
    GROUP BY l.step
  ),
  cpu_compute AS (
    SELECT o.step, sum(o.dur) AS compute_dur
    FROM kineto_cpu_ops AS o
    LEFT JOIN kineto_cpu_ops AS p
      ON p.id = o.parent_id
    WHERE
      NOT o.is_annotation
      AND (p.id IS NULL OR p.is_annotation)
      AND NOT (o.name GLOB 'c10d::*' OR o.name GLOB 'gloo:*' OR o.name GLOB 'nccl:*' OR o.name = 'record_param_comms')
    GROUP BY o.step
  ),
  per_step AS (
    SELECT
      st.step,
      st.ts,
      st.dur,
      coalesce(w.wait_dur, 0) AS wait_dur,
      CASE
        WHEN (SELECT yes FROM has_kernels) THEN coalesce(g.compute_dur, 0)
        ELSE coalesce(c.compute_dur, 0)
      END AS compute_dur
    FROM kineto_steps AS st
    LEFT JOIN wait AS w
      USING (step)
    LEFT JOIN gpu_compute AS g
      USING (step)
    LEFT JOIN cpu_compute AS c
      USING (step)
  ),
  total AS (
    SELECT
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS span,
      count(*) AS step_count,
      sum(dur) AS step_dur,
      sum(wait_dur) AS wait_dur,
      sum(compute_dur) AS compute_dur
    FROM per_step
  )
SELECT
  t.ts,
  t.span AS dur,
  max(t.wait_dur - t.compute_dur, 0) AS impact_dur,
  NULL AS step,
  printf(
    '%s waits %.3f ms per step in collectives, %.1fx its own %.3f ms of compute (%.0f%% of the %.3f ms step): a slower peer holds the collective; `kineto-sql ranks` over all ranks names the straggler (the rank with the longest compute and the shortest wait).',
    coalesce('Rank ' || (SELECT rank FROM info), 'This rank'),
    t.wait_dur / 1e6 / t.step_count,
    1.0 * t.wait_dur / max(t.compute_dur, 1),
    t.compute_dur / 1e6 / t.step_count,
    100.0 * t.wait_dur / max(t.step_dur, 1),
    t.step_dur / 1e6 / t.step_count
  ) AS evidence,
  (SELECT rank FROM info) AS rank,
  t.step_count,
  t.step_dur / t.step_count AS mean_step_dur,
  t.compute_dur / t.step_count AS mean_compute_dur,
  t.wait_dur / t.step_count AS mean_wait_dur,
  1.0 * t.wait_dur / max(t.compute_dur, 1) AS wait_to_compute
FROM total AS t
WHERE
  t.step_count > 0
  AND t.wait_dur >= $min_wait_to_compute * t.compute_dur
  AND 100.0 * t.wait_dur / max(t.step_dur, 1) >= $min_wait_pct;
