-- version: 2

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;

-- What this trace contains, as the names query headers use in `needs:`. The runner checks them before
-- running a query and answers "not applicable" instead of an empty table. `distributed` reads the
-- kineto_metadata table that kineto-sql's loader adds (it is absent in the Perfetto UI).
CREATE OR REPLACE PERFETTO TABLE kineto_capabilities(
  -- Capability: steps, cpu_ops, gpu, stacks, memory, shapes, flops, flows, distributed, compile.
  name STRING,
  -- Whether the trace has it.
  present BOOL,
  -- What was found, in words (counts), or what is missing.
  detail STRING,
  -- How many were found: the count `detail` names first (stacks: python_function frames; shapes: ops
  -- with `Input Dims`; distributed: distributedInfo entries).
  found INT
) AS
WITH
  counts AS (
    SELECT
      (SELECT count(*) FROM kineto_steps) AS steps,
      (
        SELECT count(*)
        FROM slice AS s
        JOIN kineto_event_categories AS c
          ON c.category = s.category
        WHERE
          c.event_class = 'cpu_op'
      ) AS cpu_ops,
      (
        SELECT count(*)
        FROM slice AS s
        JOIN kineto_event_categories AS c
          ON c.category = s.category
        WHERE
          c.event_class = 'gpu'
      ) AS gpu,
      (SELECT count(*) FROM slice WHERE category = 'python_function') AS python_frames,
      EXISTS (SELECT 1 FROM args WHERE key = 'args.Call stack') AS call_stack,
      (SELECT count(*) FROM slice WHERE name = '[memory]') AS memory,
      -- record_shapes writes `Input Dims` (a list, so its flat key) on every op it saw
      (SELECT count(DISTINCT arg_set_id) FROM args WHERE flat_key = 'args.Input Dims') AS shapes,
      -- with_flops writes a `flops` arg on the ops it has a formula for
      (SELECT count(*) FROM args WHERE key = 'args.flops') AS flops,
      (SELECT count(*) FROM flow) AS flows,
      (SELECT count(*) FROM kineto_metadata WHERE key = 'distributedInfo') AS distributed,
      (SELECT count(*) FROM slice WHERE name GLOB 'Torch-Compiled Region*') AS compile
  )
SELECT 'steps' AS name, steps > 0 AS present, steps || ' CPU ProfilerStep#N windows' AS detail, steps AS found
FROM counts
UNION ALL
SELECT 'cpu_ops', cpu_ops > 0, cpu_ops || ' CPU ops and annotations', cpu_ops
FROM counts
UNION ALL
SELECT 'gpu', gpu > 0, gpu || ' device activities (kernels, memcpys, memsets)', gpu
FROM counts
UNION ALL
SELECT
  'stacks',
  python_frames > 0 OR call_stack,
  python_frames || ' python_function frames'
  || CASE WHEN call_stack THEN ', Call stack args' ELSE '' END,
  python_frames
FROM counts
UNION ALL
SELECT 'memory', memory > 0, memory || ' [memory] allocator events', memory
FROM counts
UNION ALL
SELECT 'shapes', shapes > 0, shapes || ' ops with Input Dims (record_shapes)', shapes
FROM counts
UNION ALL
SELECT 'flops', flops > 0, flops || ' flops args (with_flops)', flops
FROM counts
UNION ALL
SELECT 'flows', flows > 0, flows || ' flow arrows', flows
FROM counts
UNION ALL
SELECT
  'distributed',
  distributed > 0,
  CASE WHEN distributed > 0 THEN 'distributedInfo present' ELSE 'no distributedInfo' END,
  distributed
FROM counts
UNION ALL
SELECT 'compile', compile > 0, compile || ' Torch-Compiled Region slices', compile
FROM counts;
