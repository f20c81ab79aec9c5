-- id: catalog.activation_checkpoint_surprise
-- version: 4
-- kind: detector
-- title: Activation-checkpointing surprise: forward recompute inside backward, or checkpointing that
--   does not recompute
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault
--   "Activation-checkpointing surprise"; Reading order, step 4
-- what: a second forward-shaped block (aten::linear / conv / norm / activation ops) inside the
--   backward pass (nested in autograd::engine::evaluate_function): recompute, a finding unless you enabled
--   checkpointing; or checkpoint frames (torch/utils/checkpoint.py) with no recompute in backward.
-- confirming: forward ops inside backward vs the same ops in the forward pass (recompute ratio ~1 for full
--   coverage), and the recompute time as a share of backward.
-- why: recomputing a forward block inside backward costs roughly that block's forward time again every step;
--   when it was not intended, the memory it saves buys nothing. impact_dur is the recompute ops' time.
-- known_problems: checkpointing enabled on purpose (set expect_recompute TRUE); ops that backward
--   legitimately calls with forward names (a custom autograd Function re-running a layer) look the same.
-- example: activation_checkpoint_recompute_present_1
-- use_instead: fix checkpoint() coverage: remove it where memory allows (recompute costs ~1 extra forward), or
--   wrap the blocks you meant to (use_reentrant=False; selective checkpointing policies).
-- needs: steps, cpu_ops
-- claims: busy.*, host.ops
-- status: stable
-- catalog_row: major.activation_checkpointing_surprise
-- default min_recompute_ops: 2
-- default expect_recompute: FALSE

INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.host_tree;

-- Forward-shaped ATen ops: the outer op of each forward layer (never called by an autograd backward
-- formula), so finding one inside backward means the forward ran again.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_forward_ops(
  -- Op name.
  name STRING
) AS
WITH names(name) AS (
  VALUES
    ('aten::linear'), ('aten::conv1d'), ('aten::conv2d'), ('aten::conv3d'), ('aten::gelu'), ('aten::relu'),
    ('aten::silu'), ('aten::layer_norm'), ('aten::batch_norm'), ('aten::group_norm'), ('aten::softmax'),
    ('aten::scaled_dot_product_attention'), ('aten::embedding'), ('aten::dropout'), ('aten::rms_norm')
)
SELECT name FROM names;

-- Backward passes per real thread: merged spans of evaluate_function ops.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_backward_spans(
  -- Real thread (overlap lanes folded back).
  origin_utid LONG,
  -- Span start.
  ts TIMESTAMP,
  -- Span length.
  dur DURATION
) AS
WITH
  nodes AS (
    SELECT h.origin_utid, o.ts, o.dur
    FROM kineto_cpu_ops AS o
    JOIN kineto_host_tree AS h
      USING (id)
    WHERE
      o.name GLOB 'autograd::engine::evaluate_function: *'
  )
SELECT origin_utid, ts, dur
FROM kineto_interval_merge!(nodes, (origin_utid))
-- Sorted by start: the per-step lookup below is a range scan.
ORDER BY ts;

-- One row per step with unexpected recompute, or with checkpoint frames but no recompute.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_activation_checkpoint_surprise(
  -- Forward-shaped ops inside backward per step that count as recompute.
  min_recompute_ops LONG,
  -- TRUE when you enabled checkpointing on purpose: recompute is then expected and only its absence fires.
  expect_recompute BOOL
)
RETURNS TABLE(
  -- Backward start in the step.
  ts TIMESTAMP,
  -- Backward length.
  dur DURATION,
  -- Step time at stake: the recompute time (recompute_present), 0 for recompute_missing.
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- `recompute_present` or `recompute_missing`.
  kind STRING,
  -- Forward-shaped ops inside backward.
  recompute_op_count LONG,
  -- The same ops outside backward (the forward pass).
  forward_op_count LONG,
  -- recompute_op_count / forward_op_count.
  recompute_ratio DOUBLE,
  -- Time of the outermost recomputed ops.
  recompute_dur DURATION,
  -- Backward span length in the step.
  backward_dur DURATION,
  -- Checkpoint evidence: python frames of torch/utils/checkpoint.py or Checkpoint* ops in the step.
  checkpoint_frame_count LONG
) AS
WITH
  fwd AS (
    SELECT o.id, o.ts, o.dur, o.name, o.step, o.parent_id, h.origin_utid
    FROM kineto_cpu_ops AS o
    JOIN kineto_host_tree AS h
      USING (id)
    WHERE
      o.name IN (SELECT name FROM _kineto_catalog_forward_ops)
      AND o.step IS NOT NULL
  ),
  -- Inside backward: a span of its thread started at or before the op and ends after it (spans of a
  -- thread never overlap), by one sorted pass over the spans and the ops, never a scan per op.
  swept AS (
    SELECT
      u.*,
      max(u.span_end) OVER (
        PARTITION BY u.origin_utid
        ORDER BY u.ts, u.is_op
        ROWS UNBOUNDED PRECEDING
      ) AS cover_end
    FROM (
      SELECT
        b.origin_utid, b.ts, b.ts + b.dur AS span_end, 0 AS is_op, NULL AS dur, NULL AS step,
        NULL AS parent_id
      FROM _kineto_catalog_backward_spans AS b
      UNION ALL
      SELECT f.origin_utid, f.ts, NULL, 1, f.dur, f.step, f.parent_id
      FROM fwd AS f
    ) AS u
  ),
  tagged AS (
    SELECT
      w.step,
      w.dur,
      coalesce(w.cover_end > w.ts, FALSE) AS in_bwd,
      EXISTS (
        SELECT 1
        FROM kineto_cpu_ops AS p
        WHERE
          p.id = w.parent_id
          AND p.name IN (SELECT name FROM _kineto_catalog_forward_ops)
      ) AS nested
    FROM swept AS w
    WHERE
      w.is_op = 1
  ),
  per_step AS (
    SELECT
      step,
      sum(in_bwd) AS recompute_op_count,
      sum(NOT in_bwd) AS forward_op_count,
      sum(CASE WHEN in_bwd AND NOT nested THEN dur ELSE 0 END) AS recompute_dur
    FROM tagged
    GROUP BY step
  ),
  bwd AS (
    SELECT st.step, min(b.ts) AS ts, max(b.ts + b.dur) - min(b.ts) AS dur
    FROM kineto_steps AS st
    CROSS JOIN _kineto_catalog_backward_spans AS b
    WHERE
      b.ts >= st.ts
      AND b.ts < st.ts + st.dur
    GROUP BY st.step
  ),
  -- Checkpoint evidence per step, by a range scan of slice (sorted by ts) per step and pattern.
  ckpt AS (
    SELECT step, count(*) AS n
    FROM (
      SELECT st.step
      FROM kineto_steps AS st
      CROSS JOIN slice AS s
      WHERE
        s.ts >= st.ts
        AND s.ts < st.ts + st.dur
        AND s.name GLOB '*torch/utils/checkpoint.py(*'
        AND s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
      UNION ALL
      SELECT st.step
      FROM kineto_steps AS st
      CROSS JOIN slice AS s
      WHERE
        s.ts >= st.ts
        AND s.ts < st.ts + st.dur
        AND s.name GLOB '*CheckpointFunction*'
        AND NOT coalesce(
          s.name GLOB '*torch/utils/checkpoint.py(*'
            AND s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python'),
          FALSE
        )
    )
    GROUP BY step
  ),
  rows AS (
    SELECT
      b.ts,
      b.dur,
      b.step,
      coalesce(p.recompute_op_count, 0) AS recompute_op_count,
      coalesce(p.forward_op_count, 0) AS forward_op_count,
      coalesce(p.recompute_dur, 0) AS recompute_dur,
      coalesce(c.n, 0) AS checkpoint_frame_count,
      CASE
        WHEN coalesce(p.recompute_op_count, 0) >= $min_recompute_ops AND NOT $expect_recompute THEN 'recompute_present'
        WHEN coalesce(p.recompute_op_count, 0) < $min_recompute_ops
          AND (coalesce(c.n, 0) > 0 OR $expect_recompute) THEN 'recompute_missing'
      END AS kind
    FROM bwd AS b
    LEFT JOIN per_step AS p
      USING (step)
    LEFT JOIN ckpt AS c
      USING (step)
  )
SELECT
  r.ts,
  r.dur,
  CASE WHEN r.kind = 'recompute_present' THEN r.recompute_dur ELSE 0 END AS impact_dur,
  r.step,
  CASE
    WHEN r.kind = 'recompute_present' THEN printf(
      'Step %d recomputes the forward inside backward: %d forward-shaped ops in backward vs %d in the forward pass (ratio %.2f), %.3f ms = %.1f%% of the %.3f ms backward%s.',
      r.step,
      r.recompute_op_count,
      r.forward_op_count,
      1.0 * r.recompute_op_count / max(r.forward_op_count, 1),
      r.recompute_dur / 1e6,
      100.0 * r.recompute_dur / max(r.dur, 1),
      r.dur / 1e6,
      CASE
        WHEN r.checkpoint_frame_count > 0 THEN printf('; %d torch.utils.checkpoint frames: expected only if you enabled checkpointing here', r.checkpoint_frame_count)
        ELSE ': activation checkpointing is on; a finding unless you enabled it'
      END
    )
    ELSE printf(
      'Step %d: checkpointing is enabled (%d checkpoint frames) but backward recomputes no forward op (%d forward-shaped ops in backward): the checkpoint() wrapper covers nothing that runs.',
      r.step,
      r.checkpoint_frame_count,
      r.recompute_op_count
    )
  END AS evidence,
  r.kind,
  r.recompute_op_count,
  r.forward_op_count,
  1.0 * r.recompute_op_count / max(r.forward_op_count, 1) AS recompute_ratio,
  r.recompute_dur,
  r.dur AS backward_dur,
  r.checkpoint_frame_count
FROM rows AS r
WHERE
  r.kind IS NOT NULL
ORDER BY r.ts;
