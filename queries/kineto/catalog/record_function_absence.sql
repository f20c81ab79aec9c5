-- id: catalog.record_function_absence
-- version: 6
-- kind: detector
-- title: record_function absence: long stretches of each step covered by no user annotation
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, minor fault "record_function
--   absence"
-- what: steps whose phases (data, forward, custom blocks, backward) carry no
--   torch.profiler.record_function annotation: attribution falls back to op names and guesswork.
-- confirming: per step: user annotations other than the profiler's own (ProfilerStep#, Optimizer.*,
--   enumerate(DataLoader), ## Call CompiledFxGraph, DDP/FSDP wrappers, collectives) and the share of the step
--   they leave uncovered. `## name ##` ranges other than inductor's own (TorchRec's `## forward ##`,
--   `## sparse_data_dist ##`...) are user annotations written by a library on the user's behalf.
-- why: no time is lost to the fault itself; without annotations the reading of where step time goes rests on
--   op names, so other findings are harder to place. impact_dur is 0; unannotated_dur says how much a reader
--   must guess.
-- known_problems: a capture of a model whose every phase is a single big op (nothing to annotate); steps
--   made mostly of profiler bookkeeping.
-- example: coverage_threshold_1
-- use_instead: wrap phases before capturing: with record_function("forward"/"router"/...), like NVTX ranges for nsys.
-- needs: steps, cpu_ops
-- status: stable
-- catalog_row: minor.record_function_absence
-- default min_unannotated_pct: 50

INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

-- One row per step left mostly unannotated.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_record_function_absence(
  -- A step with at least this % not covered by user annotations fires.
  min_unannotated_pct DOUBLE
)
RETURNS TABLE(
  -- Step start.
  ts TIMESTAMP,
  -- Step width.
  dur DURATION,
  -- 0: unannotated time is not lost step time (unannotated_dur says how much a reader must guess).
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- User annotations in the step (profiler-made ones excluded).
  user_annotation_count LONG,
  -- Step time covered by them.
  covered_dur DURATION,
  -- Step time covered by none.
  unannotated_dur DURATION,
  -- Share of the step not covered, %.
  unannotated_pct DOUBLE
) AS
WITH
  -- the user annotations first, materialized: joined to the steps through an automatic index (the
  -- planner's own order scanned every op once per step)
  user_ann AS MATERIALIZED (
    SELECT o.step, o.upid, o.ts, o.dur
    FROM kineto_cpu_ops AS o
    WHERE
      o.is_annotation
      AND NOT (
        o.name GLOB 'ProfilerStep#*'
        OR o.name GLOB 'Optimizer.*'
        OR o.name GLOB 'enumerate(DataLoader)*'
        OR o.name GLOB '## Call Compiled*'
        OR o.name GLOB 'DistributedDataParallel.*'
        OR o.name GLOB 'FullyShardedDataParallel.*'
        OR o.name GLOB 'nccl:*'
        OR o.name GLOB 'gloo:*'
        OR o.name GLOB 'c10d::*'
        OR o.name = 'record_param_comms'
        OR o.name GLOB 'Torch-Compiled Region*'
        OR o.name GLOB 'TorchDynamo*'
        OR o.name GLOB 'CompiledFunction*'
        OR o.name GLOB 'PyTorch Profiler*'
      )
  ),
  ann AS (
    SELECT o.step, o.upid, max(o.ts, st.ts) AS ts, min(o.ts + o.dur, st.ts + st.dur) AS end_ts
    FROM kineto_steps AS st
    JOIN user_ann AS o
      ON o.step = st.step
      AND o.upid = st.upid
  ),
  merged AS (
    SELECT step, dur AS d, interval_count AS n
    FROM kineto_interval_merge!((SELECT step, ts, end_ts - ts AS dur FROM ann), (step))
  ),
  cover AS (
    SELECT step, sum(d) AS covered, sum(n) AS n FROM merged GROUP BY step
  )
SELECT
  st.ts,
  st.dur,
  0 AS impact_dur,
  st.step,
  printf(
    'Step %d: %.1f%% of the %.3f ms step (%.3f ms) is inside no user record_function annotation (%d user annotations in the step): attribution relies on op names.',
    st.step,
    100.0 * (st.dur - coalesce(c.covered, 0)) / max(st.dur, 1),
    st.dur / 1e6,
    (st.dur - coalesce(c.covered, 0)) / 1e6,
    coalesce(c.n, 0)
  ) AS evidence,
  coalesce(c.n, 0) AS user_annotation_count,
  coalesce(c.covered, 0) AS covered_dur,
  st.dur - coalesce(c.covered, 0) AS unannotated_dur,
  100.0 * (st.dur - coalesce(c.covered, 0)) / max(st.dur, 1) AS unannotated_pct
FROM kineto_steps AS st
LEFT JOIN cover AS c
  USING (step)
WHERE
  100.0 * (st.dur - coalesce(c.covered, 0)) / max(st.dur, 1) >= $min_unannotated_pct
ORDER BY st.ts;
