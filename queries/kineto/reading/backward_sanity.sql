-- id: reading.backward_sanity
-- version: 4
-- kind: reading
-- title: Backward sanity: forward vs backward width per step, and forward recompute inside backward
-- references: "torch.profiler & HTA: the Framework View", Reading order, step 4; "torch.profiler & HTA: the
--   Framework View", Fault catalog (activation-checkpointing surprise)
-- needs: steps, cpu_ops
-- status: stable
-- default min_recompute_ops: 2

-- Backward = the outermost `autograd::engine::evaluate_function: ...` rows of the step (any thread of
-- the step's process). Forward = the outermost ATen ops of the step that start before the first of
-- them, outside Optimizer.* and DataLoader annotations. A forward-shaped op inside backward is an op
-- named like a forward root op, running under evaluate_function, that continues a forward sequence (it
-- and its neighbour inside backward appear in the same order, next to each other, among the forward
-- roots). Whether a recompute is expected is read only from the trace: torch/utils/checkpoint.py
-- python frames or Call stack entries, or CheckpointFunction autograd nodes, in the step.

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.enclosing_op;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

-- Every ATen op (annotations excluded) inside a step, with where it sits: inside backward or not, the
-- nearest enclosing op, and whether an Optimizer / DataLoader annotation encloses it.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_backward_ops(
  -- Slice id of the op.
  id JOINID(slice.id),
  -- Step number.
  step LONG,
  -- Op start.
  ts TIMESTAMP,
  -- Op duration.
  dur DURATION,
  -- Op name.
  name STRING,
  -- True for autograd::engine::evaluate_function rows and everything under them.
  in_bwd BOOL,
  -- True for an evaluate_function row with no evaluate_function above it.
  bwd_root BOOL,
  -- Name of the nearest enclosing ATen op (annotations skipped), or NULL for an outermost op.
  outer_op STRING,
  -- True when an Optimizer.* or DataLoader annotation encloses the op.
  excluded BOOL
) AS
WITH
  ops AS (
    SELECT
      o.id,
      o.step,
      o.ts,
      o.dur,
      o.name
    FROM kineto_cpu_ops AS o
    WHERE
      o.step IS NOT NULL
      AND NOT o.is_annotation
  ),
  placed AS (
    SELECT
      o.*,
      (
        SELECT count(*)
        FROM ancestor_slice(o.id) AS a
        WHERE
          a.name GLOB 'autograd::engine::evaluate_function: *'
      ) AS bwd_above,
      -- the op it runs inside (the innermost one: `outer` to the op itself)
      (SELECT s.name FROM slice AS s WHERE s.id = kineto_enclosing_op!(o.id, TRUE, FALSE)) AS outer_op,
      EXISTS (
        SELECT 1
        FROM ancestor_slice(o.id) AS a
        WHERE
          a.name GLOB 'Optimizer.*'
          OR a.name GLOB '*DataLoader*'
      ) AS excluded
    FROM ops AS o
  )
SELECT
  id,
  step,
  ts,
  dur,
  name,
  (bwd_above > 0 OR name GLOB 'autograd::engine::evaluate_function: *') AS in_bwd,
  (bwd_above = 0 AND name GLOB 'autograd::engine::evaluate_function: *') AS bwd_root,
  outer_op,
  excluded
FROM placed
ORDER BY ts;

-- One row per step that has a backward pass.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_backward_sanity(
  -- A step has a recompute block when at least this many forward-shaped ops run inside backward.
  min_recompute_ops LONG
)
RETURNS TABLE(
  -- Step number N of ProfilerStep#N.
  step LONG,
  -- Step width.
  step_dur DURATION,
  -- Summed duration of the outermost forward ops (before backward starts).
  fwd_dur DURATION,
  -- Summed duration of the outermost evaluate_function rows.
  bwd_dur DURATION,
  -- bwd_dur / fwd_dur (about 2 is the usual shape).
  bwd_fwd_ratio DOUBLE,
  -- Number of outermost forward ops.
  fwd_ops LONG,
  -- Number of outermost evaluate_function rows (autograd nodes run).
  bwd_nodes LONG,
  -- Forward-shaped ops found inside backward (the recompute block).
  recompute_ops LONG,
  -- Their summed duration.
  recompute_dur DURATION,
  -- The first few of them in order, e.g. `aten::linear, aten::gelu, aten::linear`.
  recompute_sequence STRING,
  -- Checkpoint evidence in the step: checkpoint.py frames / Call stack entries / CheckpointFunction rows.
  checkpoint_marks LONG,
  -- recompute_expected (recompute and checkpoint evidence), recompute_surprising (recompute without
  -- any), recompute_missing (checkpoint evidence, no recompute), or none.
  finding STRING,
  -- One sentence with the numbers.
  evidence STRING
) AS
WITH
  bwd AS (
    SELECT
      step,
      min(ts) AS bwd_ts,
      max(ts + dur) AS bwd_end,
      sum(dur) AS bwd_dur,
      count(*) AS bwd_nodes
    FROM _kineto_reading_backward_ops
    WHERE
      bwd_root
    GROUP BY step
  ),
  fwd_roots AS (
    SELECT
      o.step,
      o.id,
      o.ts,
      o.dur,
      o.name,
      row_number() OVER (PARTITION BY o.step ORDER BY o.ts, o.id) AS pos
    FROM _kineto_reading_backward_ops AS o
    JOIN bwd AS b
      USING (step)
    WHERE
      o.outer_op IS NULL
      AND NOT o.in_bwd
      AND NOT o.excluded
      AND o.ts < b.bwd_ts
  ),
  fwd AS (
    SELECT
      step,
      sum(dur) AS fwd_dur,
      count(*) AS fwd_ops
    FROM fwd_roots
    GROUP BY step
  ),
  -- consecutive forward roots of a step, one text key per pair (step, first name, second name, joined by
  -- the unit separator, which no op name holds): a one-column IN is answered from an ephemeral index,
  -- where a row-value IN scanned the pairs for every candidate
  fwd_pairs AS MATERIALIZED (
    SELECT DISTINCT step || char(31) || name || char(31) || next_name AS pair_key
    FROM (SELECT step, name, lead(name) OVER (PARTITION BY step ORDER BY pos) AS next_name FROM fwd_roots)
    WHERE
      next_name IS NOT NULL
  ),
  -- (step, name) of the forward roots as one text key (as fwd_pairs): a correlated
  -- `name IN (... WHERE step = o.step)` rescanned the roots for every op
  fwd_names AS MATERIALIZED (
    SELECT DISTINCT step || char(31) || name AS name_key FROM fwd_roots
  ),
  candidates AS (
    SELECT
      o.step,
      o.id,
      o.ts,
      o.dur,
      o.name,
      row_number() OVER (PARTITION BY o.step ORDER BY o.ts, o.id) AS pos
    FROM _kineto_reading_backward_ops AS o
    WHERE
      o.in_bwd
      AND NOT o.bwd_root
      AND o.step || char(31) || o.name IN (SELECT name_key FROM fwd_names)
      AND (
        o.outer_op IS NULL
        OR o.outer_op GLOB 'autograd::engine::evaluate_function: *'
        OR o.step || char(31) || o.outer_op NOT IN (SELECT name_key FROM fwd_names)
      )
  ),
  -- each candidate with its neighbours inside backward (pos - 1, pos + 1)
  neighboured AS (
    SELECT
      c.*,
      lag(c.name) OVER (PARTITION BY c.step ORDER BY c.pos) AS prev_name,
      lead(c.name) OVER (PARTITION BY c.step ORDER BY c.pos) AS next_name
    FROM candidates AS c
  ),
  -- materialized: read once per step by recompute's sequence
  paired AS MATERIALIZED (
    SELECT
      c.step,
      c.id,
      c.ts,
      c.dur,
      c.name,
      c.pos,
      coalesce(c.step || char(31) || c.name || char(31) || c.next_name IN (SELECT pair_key FROM fwd_pairs), FALSE)
      OR coalesce(c.step || char(31) || c.prev_name || char(31) || c.name IN (SELECT pair_key FROM fwd_pairs), FALSE)
        AS in_sequence
    FROM neighboured AS c
  ),
  recompute AS (
    SELECT
      step,
      count(*) AS recompute_ops,
      sum(dur) AS recompute_dur,
      (
        SELECT group_concat(x.name, ', ')
        FROM (
          SELECT p2.name
          FROM paired AS p2
          WHERE
            p2.step = p.step
            AND p2.in_sequence
          ORDER BY p2.ts
          LIMIT 6
        ) AS x
      ) AS recompute_sequence
    FROM paired AS p
    WHERE
      in_sequence
    GROUP BY step
  ),
  marks AS (
    SELECT
      st.step,
      (
        SELECT count(*)
        FROM slice AS s
        WHERE
          s.ts >= st.ts
          AND s.ts < st.ts + st.dur
          AND (
            (
              s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
              AND s.name GLOB '*torch/utils/checkpoint.py*'
            )
            OR s.name GLOB '*CheckpointFunction*'
            OR extract_arg(s.arg_set_id, 'args.Call stack') GLOB '*torch/utils/checkpoint.py*'
          )
      ) AS checkpoint_marks
    FROM kineto_steps AS st
  ),
  joined AS (
    SELECT
      st.step,
      st.dur AS step_dur,
      coalesce(f.fwd_dur, 0) AS fwd_dur,
      b.bwd_dur,
      coalesce(f.fwd_ops, 0) AS fwd_ops,
      b.bwd_nodes,
      coalesce(r.recompute_ops, 0) AS recompute_ops,
      coalesce(r.recompute_dur, 0) AS recompute_dur,
      r.recompute_sequence,
      m.checkpoint_marks
    FROM kineto_steps AS st
    JOIN bwd AS b
      USING (step)
    LEFT JOIN fwd AS f
      USING (step)
    LEFT JOIN recompute AS r
      USING (step)
    LEFT JOIN marks AS m
      USING (step)
  ),
  judged AS (
    SELECT
      j.*,
      CASE WHEN j.fwd_dur > 0 THEN round(1.0 * j.bwd_dur / j.fwd_dur, 2) END AS ratio,
      CASE
        WHEN j.recompute_ops >= $min_recompute_ops AND j.checkpoint_marks > 0 THEN 'recompute_expected'
        WHEN j.recompute_ops >= $min_recompute_ops THEN 'recompute_surprising'
        WHEN j.checkpoint_marks > 0 THEN 'recompute_missing'
        ELSE 'none'
      END AS finding
    FROM joined AS j
  )
SELECT
  step,
  step_dur,
  fwd_dur,
  bwd_dur,
  ratio AS bwd_fwd_ratio,
  fwd_ops,
  bwd_nodes,
  recompute_ops,
  recompute_dur,
  recompute_sequence,
  checkpoint_marks,
  finding,
  printf(
    'step %d: forward %.3f ms (%d ops), backward %.3f ms (%d autograd nodes), ratio %s; %s',
    step,
    fwd_dur / 1e6,
    fwd_ops,
    bwd_dur / 1e6,
    bwd_nodes,
    coalesce(printf('%.2f', ratio), 'n/a'),
    CASE finding
      WHEN 'recompute_expected'
        THEN printf(
          '%d forward-shaped ops (%.3f ms: %s) run inside backward, and %d checkpoint marks say activation checkpointing is on (expected recompute)',
          recompute_ops, recompute_dur / 1e6, recompute_sequence, checkpoint_marks
        )
      WHEN 'recompute_surprising'
        THEN printf(
          '%d forward-shaped ops (%.3f ms: %s) run inside backward with no checkpoint frame in the trace (a finding unless you enabled checkpointing)',
          recompute_ops, recompute_dur / 1e6, recompute_sequence
        )
      WHEN 'recompute_missing'
        THEN printf(
          '%d checkpoint marks but no forward-shaped ops inside backward (checkpointing expected but no recompute seen)',
          checkpoint_marks
        )
      ELSE 'no forward-shaped ops inside backward'
    END
  ) AS evidence
FROM judged
ORDER BY step;
