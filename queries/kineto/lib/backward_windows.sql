-- version: 1

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
