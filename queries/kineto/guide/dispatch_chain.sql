-- id: guide.dispatch_chain
-- version: 2
-- kind: guide
-- title: Dispatch chain: python frame -> record_function -> ATen op -> sub-op -> runtime call -> kernel, one row per kernel
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Analyzing the CPU and GPU
--   Dispatch Chain"
-- needs: gpu, cpu_ops
-- status: stable
-- default name: "aten::mm"
-- default max_rows: 50

-- Walks each kernel back through its launch (args.correlation) to the ops above it. The chain column
-- lists the innermost python frame, the innermost record_function annotation (ProfilerStep excluded),
-- then the ATen ops outermost first, the runtime call and the kernel.

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.python_frames;

-- One row per matching kernel.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_dispatch_chain(
  -- GLOB pattern matched against the kernel name and every op in the chain.
  name STRING,
  -- At most this many kernels, earliest first.
  max_rows LONG
)
RETURNS TABLE(
  -- Slice id of the kernel.
  kernel_id LONG,
  -- Kernel start.
  ts TIMESTAMP,
  -- Kernel duration.
  dur DURATION,
  -- Step of the launch, or NULL.
  step LONG,
  -- Innermost python frame above the op, or NULL.
  python_frame STRING,
  -- Innermost record_function annotation, or NULL.
  annotation STRING,
  -- Outermost ATen op.
  top_op STRING,
  -- Innermost ATen op (the one that launched).
  op STRING,
  -- Runtime call.
  runtime_call STRING,
  -- Kernel name.
  kernel STRING,
  -- The whole chain joined with ' -> '.
  chain STRING
) AS
WITH
  launched AS (
    SELECT
      k.id AS kernel_id,
      k.ts,
      k.dur,
      k.name AS kernel,
      l.id AS launch_id,
      l.name AS runtime_call,
      l.step,
      l.op_id
    FROM kineto_kernels AS k
    JOIN kineto_launches AS l
      ON l.correlation = k.correlation
    WHERE
      k.correlation IS NOT NULL
  ),
  with_ops AS (
    SELECT
      x.*,
      (
        SELECT group_concat(y.name, ' -> ')
        FROM (
          SELECT a.name
          FROM ancestor_slice(x.launch_id) AS a
          JOIN kineto_event_categories AS c
            ON c.category = a.category
          WHERE
            c.event_class = 'cpu_op'
            AND NOT c.is_annotation
            AND NOT a.name GLOB 'ProfilerStep#*'
          ORDER BY a.depth
        ) AS y
      ) AS ops,
      (
        SELECT a.name
        FROM ancestor_slice(x.launch_id) AS a
        JOIN kineto_event_categories AS c
          ON c.category = a.category
        WHERE
          c.event_class = 'cpu_op'
          AND c.is_annotation
          AND NOT a.name GLOB 'ProfilerStep#*'
        ORDER BY a.depth DESC
        LIMIT 1
      ) AS annotation
    FROM launched AS x
  ),
  matched AS (
    SELECT *
    FROM with_ops AS w
    WHERE
      w.kernel GLOB $name
      OR EXISTS (
        SELECT 1
        FROM ancestor_slice(w.launch_id) AS a
        WHERE
          a.name GLOB $name
      )
    ORDER BY w.ts
    LIMIT $max_rows
  )
SELECT
  m.kernel_id,
  m.ts,
  m.dur,
  m.step,
  (SELECT f.frame FROM kineto_python_frames(m.launch_id) AS f WHERE f.distance = 1) AS python_frame,
  m.annotation,
  CASE WHEN instr(m.ops, ' -> ') > 0 THEN substr(m.ops, 1, instr(m.ops, ' -> ') - 1) ELSE m.ops END AS top_op,
  (SELECT s.name FROM slice AS s WHERE s.id = m.op_id) AS op,
  m.runtime_call,
  m.kernel,
  coalesce((SELECT f.frame FROM kineto_python_frames(m.launch_id) AS f WHERE f.distance = 1) || ' -> ', '')
  || coalesce(m.annotation || ' -> ', '')
  || coalesce(m.ops || ' -> ', '')
  || m.runtime_call || ' -> ' || m.kernel AS chain
FROM matched AS m
ORDER BY m.ts;
