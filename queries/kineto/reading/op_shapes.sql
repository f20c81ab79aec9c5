-- id: reading.op_shapes
-- version: 1
-- kind: reading
-- title: The work of one rank per step: every ATen op by its input shapes, with its calls per profiler step
-- references: torch.profiler (record_shapes: the ops' "Input Dims"),
--   https://pytorch.org/docs/stable/profiler.html; "Fault catalog": major fault "Straggler rank"
-- needs: none
-- status: preview

-- One row per (op, input shapes) of the ATen ops inside profiler steps: how many calls, over how many steps,
-- calls per step. Ranks of a data-parallel job run the same ops on the same shapes every step; the cross-rank
-- reading (queries/fleet/shape_balance.sql) compares these rows across ranks to tell a straggler that does
-- the same work more slowly (the machine) from one given more or larger work (data imbalance: variable
-- sequence length, uneven sharding). input_dims is the op's `Input Dims` args joined in key order (NULL
-- without record_shapes). Annotations (record_function, ProfilerStep) are not ops and are left out.

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

-- One row per (op, input shapes).
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_op_shapes()
RETURNS TABLE(
  -- ATen op name.
  name STRING,
  -- The op's `Input Dims`, key=value joined by ';' in key order; NULL without record_shapes.
  input_dims STRING,
  -- Calls inside profiler steps.
  calls LONG,
  -- Profiler steps with at least one op.
  steps LONG,
  -- calls / steps.
  calls_per_step DOUBLE
) AS
WITH
  ops AS (
    SELECT o.name, o.step, o.arg_set_id
    FROM kineto_cpu_ops AS o
    WHERE
      o.step IS NOT NULL AND NOT o.is_annotation
  ),
  dims AS (
    SELECT arg_set_id, GROUP_CONCAT(key || '=' || display_value, ';') AS input_dims
    FROM (
      SELECT a.arg_set_id, a.key, a.display_value
      FROM args AS a
      WHERE
        a.arg_set_id IN (SELECT arg_set_id FROM ops) AND a.key GLOB 'args.Input Dims*'
      ORDER BY a.arg_set_id, a.key
    )
    GROUP BY arg_set_id
  ),
  total AS (
    SELECT count(DISTINCT step) AS steps FROM ops
  )
SELECT
  o.name,
  d.input_dims,
  count(*) AS calls,
  t.steps,
  1.0 * count(*) / t.steps AS calls_per_step
FROM ops AS o
LEFT JOIN dims AS d USING (arg_set_id)
CROSS JOIN total AS t
GROUP BY o.name, d.input_dims
ORDER BY calls DESC, o.name, d.input_dims;
