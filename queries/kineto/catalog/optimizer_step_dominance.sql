-- id: catalog.optimizer_step_dominance
-- version: 4
-- kind: detector
-- title: Optimizer step dominance: thousands of tiny per-parameter ops after backward
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Optimizer step
--   dominance"
-- what: post-backward, thousands of tiny aten::add_ / mul_ / lerp_ / addcmul_ / sqrt / div_ (one set
--   per parameter tensor) inside `Optimizer.step#<Opt>.step`.
-- confirming: optimizer share of the step; tiny ops per step; foreach / fused flags off (no
--   aten::_foreach_* / aten::_fused_* ops in the optimizer step).
-- why: a per-parameter optimizer launches several tiny ops per tensor: thousands of launches whose overhead,
--   not the math, is the optimizer time (impact_dur is the optimizer step's time).
-- known_problems: a model with few, large parameters where the optimizer is legitimately heavy (the small-op
--   count stays low); an optimizer that is per-parameter by design (some sparse optimizers).
-- example: at_threshold_1
-- use_instead: fused=True or foreach=True (Adam/AdamW/SGD), or an FSDP / ZeRO sharded step; fewer, larger
--   parameter tensors.
-- needs: cpu_ops
-- claims: busy.elementwise, busy.compute_other, idle.launch, idle.host_compute, host.ops
-- status: stable
-- catalog_row: major.optimizer_step_dominance
-- default min_share_pct: 25
-- default min_small_ops: 500
-- default max_op: 50us

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;
INCLUDE PERFETTO MODULE intervals.intersect;

-- A step that already runs foreach / fused kernels does not fire even when long (the fused CPU Adam still
-- runs ~8 bookkeeping ops per parameter): that is a parameter-count problem, not this row's flag.

-- One row per Optimizer.step annotation that dominates its step.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_optimizer_step_dominance(
  -- The optimizer step takes at least this % of its iteration window.
  min_share_pct DOUBLE,
  -- And runs at least this many ops (seed: thousands of tiny per-param ops; a fused / foreach step runs a
  -- handful)
  min_small_ops LONG,
  -- An op shorter than this is tiny.
  max_op DURATION
)
RETURNS TABLE(
  -- Optimizer step start.
  ts TIMESTAMP,
  -- Optimizer step duration.
  dur DURATION,
  -- Step time at stake: the optimizer step time.
  impact_dur DURATION,
  -- Iteration number of the window.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- The annotation, e.g. Optimizer.step#Adam.step.
  optimizer STRING,
  -- Optimizer step share of its iteration window, %.
  share_pct DOUBLE,
  -- ATen ops inside the optimizer step.
  op_count LONG,
  -- Of them shorter than max_op.
  small_op_count LONG,
  -- aten::_foreach_* / aten::_fused_* ops inside (0 = foreach and fused both off).
  foreach_fused_count LONG,
  -- The most frequent op names inside, with counts.
  top_ops STRING
) AS
WITH
  -- the Optimizer.step annotations, each in its iteration window (kineto.lib.iterations: ProfilerStep#N,
  -- else inferred iterations, else the capture): no ProfilerStep needed
  opt_all AS (
    SELECT o.id, o.ts, o.dur, o.name, o.upid
    FROM kineto_cpu_ops AS o
    WHERE
      o.is_annotation
      AND o.name GLOB 'Optimizer.step#*'
  ),
  opt AS (
    SELECT a.id, a.ts, a.dur, a.name, a.upid, w.window_id, w.step
    FROM opt_all AS a
    JOIN kineto_window_of!(opt_all) AS w
      USING (id)
  ),
  windows AS (
    SELECT window_id, noun, window_dur
    FROM kineto_ledger_claim('busy.elementwise, busy.compute_other, idle.launch, idle.host_compute, host.ops')
  ),
  -- each op's start in the optimizer steps of its process: an interval intersect of the start points with
  -- the steps (linear in ops + steps, not a scan of the ops per optimizer step)
  inside AS MATERIALIZED (
    SELECT ii.id_1 AS opt_id, o.name, o.dur
    FROM _interval_intersect!(
      (
        (SELECT id, ts, 1 AS dur, upid FROM kineto_cpu_ops WHERE NOT is_annotation AND upid IS NOT NULL),
        (SELECT id, ts, dur, upid FROM opt WHERE dur > 0 AND upid IS NOT NULL)
      ),
      (upid)
    ) AS ii
    JOIN kineto_cpu_ops AS o
      ON o.id = ii.id_0
  ),
  counts AS (
    SELECT
      opt_id,
      count(*) AS op_count,
      sum(dur < $max_op) AS small_op_count,
      sum(name GLOB 'aten::_foreach_*' OR name GLOB 'aten::_fused_*') AS foreach_fused_count
    FROM inside
    GROUP BY opt_id
  ),
  names AS (
    SELECT opt_id, name, count(*) AS n, row_number() OVER (PARTITION BY opt_id ORDER BY count(*) DESC, name) AS rn
    FROM inside
    GROUP BY opt_id, name
  ),
  top AS (
    SELECT opt_id, group_concat(name || ' x' || n, ', ') AS top_ops
    FROM (SELECT * FROM names WHERE rn <= 5 ORDER BY opt_id, rn)
    GROUP BY opt_id
  )
SELECT
  a.ts,
  a.dur,
  a.dur AS impact_dur,
  a.step,
  printf(
    '%s %d: %s takes %.3f ms (%.1f%% of the %s) running %d ops, %d of them under %.0f us (%s); %s.',
    st.noun,
    a.step,
    a.name,
    a.dur / 1e6,
    100.0 * a.dur / max(st.window_dur, 1),
    lower(st.noun),
    c.op_count,
    c.small_op_count,
    $max_op / 1e3,
    t.top_ops,
    CASE WHEN c.foreach_fused_count = 0 THEN 'no foreach / fused kernels: per-parameter loop' ELSE c.foreach_fused_count || ' foreach / fused ops' END
  ) AS evidence,
  a.name AS optimizer,
  100.0 * a.dur / max(st.window_dur, 1) AS share_pct,
  c.op_count,
  c.small_op_count,
  c.foreach_fused_count,
  t.top_ops
FROM opt AS a
JOIN windows AS st
  USING (window_id)
JOIN counts AS c
  ON c.opt_id = a.id
LEFT JOIN top AS t
  ON t.opt_id = a.id
WHERE
  100.0 * a.dur / max(st.window_dur, 1) >= $min_share_pct
  AND c.small_op_count >= $min_small_ops
  AND c.foreach_fused_count = 0
ORDER BY a.ts;
