-- version: 2

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.window_of;

-- The backward pass of each window of the step-time ledger (kineto.lib.iterations: ProfilerStep#N, else
-- the inferred iterations, else the capture): from the first to the end of the last
-- `autograd::engine::evaluate_function:` op that starts in the window (any thread of its process).
CREATE OR REPLACE PERFETTO TABLE kineto_backward_windows(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- Process of the window.
  upid JOINID(process.id),
  -- Iteration number (kineto_iterations.step: N of ProfilerStep#N, else 1, 2, ...).
  step LONG,
  -- First backward op start.
  ts TIMESTAMP,
  -- Up to the end of the last backward op.
  dur DURATION,
  -- Number of evaluate_function ops.
  node_count LONG
) AS
WITH
  nodes AS (
    SELECT id, upid, ts, dur
    FROM kineto_cpu_ops
    WHERE
      name GLOB 'autograd::engine::evaluate_function: *'
  )
SELECT
  w.window_id,
  max(n.upid) AS upid,
  max(w.step) AS step,
  min(n.ts) AS ts,
  max(n.ts + n.dur) - min(n.ts) AS dur,
  count(*) AS node_count
FROM kineto_window_of!((SELECT id, upid, ts FROM nodes)) AS w
JOIN nodes AS n
  USING (id)
GROUP BY w.window_id;
