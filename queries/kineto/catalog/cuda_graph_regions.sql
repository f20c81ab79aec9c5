-- id: catalog.cuda_graph_regions
-- version: 2
-- kind: detector
-- title: CUDA-graph regions: graph launches whose kernels have no per-op attribution
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, minor fault "CUDA-graph regions"
-- what: cudaGraphLaunch / hipGraphLaunch calls, each putting many kernels on the device under one
--   correlation id: the captured graph shows as one opaque blob; per-op attribution inside is gone.
-- confirming: per step: graph launches, the kernels they ran and their GPU time, that time's share of
--   the step's kernel time (the part no ATen op explains).
-- why: it costs no time by itself (graphs remove launch overhead); it makes the per-op device attribution of
--   the graphed region disappear, so other rules under-count there. impact_dur is 0: a reading warning, not a
--   fault.
-- known_problems: none as a detection (a graph launch is unambiguous); it is informational and fires on
--   every graphed capture.
-- example: one_launch_many_kernels
-- use_instead: expected, not a bug: attribute before graphing (profile the same step eagerly, or with the graph
--   capture disabled), then graph it.
-- needs: none
-- status: stable

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;

-- One row per step with graph launches (one row for the whole trace when it has no ProfilerStep).
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_cuda_graph_regions()
RETURNS TABLE(
  -- First graph launch.
  ts TIMESTAMP,
  -- From it to the device end of the last graph's kernels.
  dur DURATION,
  -- 0: graphs cost no step time (they usually save it); graph_gpu_dur is the unattributed device time.
  impact_dur DURATION,
  -- Step number, or NULL.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Graph launch calls.
  graph_launch_count LONG,
  -- Device activities they ran.
  graph_kernel_count LONG,
  -- Their summed device time.
  graph_gpu_dur DURATION,
  -- graph_gpu_dur as % of all device-activity time launched in the step.
  graph_share_pct DOUBLE,
  -- The launching ops, with counts.
  ops STRING
) AS
WITH
  g AS (
    SELECT *
    FROM kineto_launches
    WHERE
      name GLOB '*GraphLaunch*'
  ),
  all_gpu AS (
    SELECT step, sum(gpu_dur) AS d
    FROM kineto_launches
    GROUP BY step
  ),
  op_counts AS (
    SELECT step, coalesce(op_name, '(no op)') AS op, count(*) AS n
    FROM g
    GROUP BY step, coalesce(op_name, '(no op)')
  ),
  op_text AS (
    SELECT step, group_concat(op || ' x' || n, ', ') AS ops
    FROM op_counts
    GROUP BY step
  ),
  per_step AS (
    SELECT
      step,
      min(ts) AS ts,
      max(coalesce(gpu_end_ts, ts + dur)) - min(ts) AS span,
      count(*) AS n,
      sum(gpu_count) AS k,
      coalesce(sum(gpu_dur), 0) AS d
    FROM g
    GROUP BY step
  )
SELECT
  p.ts,
  p.span AS dur,
  0 AS impact_dur,
  p.step,
  printf(
    '%s%d graph launches ran %d device activities (%.3f ms, %.1f%% of the device time launched%s) with no per-op attribution inside: expected for CUDA/HIP graphs; attribute ops from an eager capture.',
    CASE WHEN p.step IS NULL THEN 'Outside any ProfilerStep: ' ELSE 'Step ' || p.step || ': ' END,
    p.n,
    coalesce(p.k, 0),
    p.d / 1e6,
    100.0 * p.d / max(coalesce(a.d, 0), 1),
    CASE WHEN p.step IS NULL THEN '' ELSE ' in the step' END
  ) AS evidence,
  p.n AS graph_launch_count,
  coalesce(p.k, 0) AS graph_kernel_count,
  p.d AS graph_gpu_dur,
  100.0 * p.d / max(coalesce(a.d, 0), 1) AS graph_share_pct,
  o.ops
FROM per_step AS p
LEFT JOIN all_gpu AS a
  ON a.step IS p.step
LEFT JOIN op_text AS o
  ON o.step IS p.step
ORDER BY p.ts;
