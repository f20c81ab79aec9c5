-- version: 1
-- locked: 1 a9929ae050f27008
-- lib: lib.cpu_ops@5 lib.event_categories@4 lib.host_slices@8 lib.host_tree@3 lib.steps@9 lib.thread_slices@2
--   lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

-- The backward pass of each step: from the first to the end of the last
-- `autograd::engine::evaluate_function:` op in the step (any thread of the process).
CREATE OR REPLACE PERFETTO TABLE kineto_backward_windows(
  -- Step number.
  step LONG,
  -- First backward op start.
  ts TIMESTAMP,
  -- Up to the end of the last backward op.
  dur DURATION,
  -- Number of evaluate_function ops.
  node_count LONG
) AS
SELECT
  step,
  min(ts) AS ts,
  max(ts + dur) - min(ts) AS dur,
  count(*) AS node_count
FROM kineto_cpu_ops
WHERE
  name GLOB 'autograd::engine::evaluate_function: *'
  AND step IS NOT NULL
GROUP BY step;
