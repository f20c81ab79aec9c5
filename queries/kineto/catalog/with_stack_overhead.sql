-- id: catalog.with_stack_overhead
-- version: 6
-- kind: detector
-- title: with_stack overhead: a capture with Python stack tracing, whose step times are inflated
-- source: "torch.profiler & HTA: the Framework View", Fault catalog, minor fault "with_stack overhead"
-- signature: python_function events (with_stack=True) or `Call stack` args on the ops in every step: the
--   profiler traced every Python call, a 2-3x CPU-side slowdown on Python-heavy steps.
-- confirming: python frames per step and the estimated tracing cost (frames x per-frame cost) as a share
--   of the step.
-- cost: recording every Python frame slows the host 2-3x on Python-heavy steps, so the capture's step times
--   and host-bound readings are inflated (impact_dur is the estimated tracing cost: frame_cost per frame, a
--   guess below the 1.9-2.7 us per frame measured on CPU captures, and never more than the frames' own time
--   outside their children, where the tracer's cost is recorded). It costs step time only
--   where the host is on the critical path: diagnose caps the claim to the ledger's host-side buckets
--   (device idle while the host computes or issues launches; host time on a CPU-only capture).
-- false_positives: a capture taken with stacks on purpose to find a line of code: the finding is then a
--   reminder not to read timings from it.
-- example: threshold_1
-- fix: two captures, two purposes: with_stack=True for attribution, with_stack=False (and no
--   record_shapes/profile_memory) for timing.
-- needs: steps
-- claims: idle.host_compute, idle.launch, host.python, host.ops
-- status: stable
-- catalog_row: minor.with_stack_overhead
-- default frame_cost: 1us
-- default min_overhead_pct: 20
-- locked: 6 bf3ac2ff95f327b1
-- lib: lib.event_categories@4 lib.steps@9 lib.thread_slices@2 lib.thread_track_slices@1
-- cases: threshold_1=da4767bd threshold_2=9f6a89ee bounded_by_frame_self_time=442a405b

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;

-- One row per step whose estimated stack-tracing overhead is material.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_with_stack_overhead(
  -- Estimated tracing cost per recorded python frame or stacked op.
  frame_cost DURATION,
  -- An estimated overhead at or above this % of the step fires (a fifth of the step: timing from such a
  -- capture is misleading; light stacks, ~500 frames in a 7 ms step, stay under)
  min_overhead_pct DOUBLE
)
RETURNS TABLE(
  -- Step start.
  ts TIMESTAMP,
  -- Step width.
  dur DURATION,
  -- Estimated step time added by stack tracing.
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- python_function frames in the step.
  python_frame_count LONG,
  -- Ops carrying a `Call stack` arg in the step (older traces).
  stacked_op_count LONG,
  -- Estimated overhead as % of the step.
  overhead_pct DOUBLE
) AS
WITH
  py AS MATERIALIZED (
    SELECT s.id, s.ts, s.dur FROM slice AS s
    WHERE s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
  ),
  -- Time each frame's direct children (frames or ops) cover, one grouped pass.
  py_children AS MATERIALIZED (
    SELECT c.parent_id AS id, sum(max(c.dur, 0)) AS covered
    FROM slice AS c
    WHERE c.parent_id IN (SELECT id FROM py)
    GROUP BY c.parent_id
  ),
  -- The slices that start in each step window (any process), by a range scan of the slice table (sorted
  -- by ts) per step: every slice is read once per window that holds it, never once per step.
  frames AS (
    SELECT
      st.step,
      count(*) AS n,
      sum(max(max(s.dur, 0) - coalesce(ch.covered, 0), 0)) AS self_dur
    FROM kineto_steps AS st
    CROSS JOIN slice AS s
    LEFT JOIN py_children AS ch
      ON ch.id = s.id
    WHERE
      st.dur > 0
      AND s.ts >= st.ts
      AND s.ts < st.ts + st.dur
      AND s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
    GROUP BY st.step
  ),
  -- Slices holding a Call stack arg (the JSON importer stores no arg for a null value).
  stacked AS (
    SELECT st.step, count(*) AS n
    FROM kineto_steps AS st
    CROSS JOIN slice AS s
    WHERE
      st.dur > 0
      AND s.ts >= st.ts
      AND s.ts < st.ts + st.dur
      AND extract_arg(s.arg_set_id, 'args.Call stack') IS NOT NULL
    GROUP BY st.step
  ),
  rows AS (
    SELECT
      st.ts,
      st.dur,
      st.step,
      coalesce(f.n, 0) AS python_frame_count,
      coalesce(k.n, 0) AS stacked_op_count,
      coalesce(f.self_dur, 0) AS frame_self_dur,
      -- The tracer's cost of a frame is recorded inside that frame, outside its children: the frames'
      -- own time bounds the per-frame guess from above.
      min(coalesce(f.n, 0) * $frame_cost, coalesce(f.self_dur, 0)) + coalesce(k.n, 0) * $frame_cost AS est
    FROM kineto_steps AS st
    LEFT JOIN frames AS f
      USING (step)
    LEFT JOIN stacked AS k
      USING (step)
  )
SELECT
  r.ts,
  r.dur,
  CAST(min(r.est, r.dur) AS INT) AS impact_dur,
  r.step,
  printf(
    'Step %d was captured with Python stacks: %d python frames%s, an estimated ~%.3f ms of tracing (%.1f us per frame, at most the frames'' own %.3f ms outside their children; %.1f%% of the %.3f ms step): use it for attribution, not timing.',
    r.step,
    r.python_frame_count,
    CASE WHEN r.stacked_op_count > 0 THEN printf(' and %d ops with Call stack args', r.stacked_op_count) ELSE '' END,
    r.est / 1e6,
    $frame_cost / 1e3,
    r.frame_self_dur / 1e6,
    100.0 * r.est / max(r.dur, 1),
    r.dur / 1e6
  ) AS evidence,
  r.python_frame_count,
  r.stacked_op_count,
  100.0 * r.est / max(r.dur, 1) AS overhead_pct
FROM rows AS r
WHERE
  r.python_frame_count + r.stacked_op_count > 0
  AND 100.0 * r.est / max(r.dur, 1) >= $min_overhead_pct
ORDER BY r.ts;
