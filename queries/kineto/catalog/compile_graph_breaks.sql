-- id: catalog.compile_graph_breaks
-- version: 3
-- kind: detector
-- title: torch.compile graph breaks: eager islands between compiled regions
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, minor fault "torch.compile regions"
-- what: a `Torch-Compiled Region: N/M` running inside another compiled region's call (the resume
--   function dynamo builds after a graph break; `torch_dynamo_resume_in_*` frames with stacks), with eager
--   ATen ops between the compiled graphs; or, without any nested region, eager ATen ops inside a
--   `Torch-Compiled Region` but outside every `## Call CompiledFxGraph` / CompiledFunction (an eager island:
--   dynamo ran part of the frame eagerly, a fallback op, or a backend that compiles nothing).
-- confirming: per step (a ProfilerStep window, else an inferred iteration, else the capture: a serving
--   loop compiled without a profiler schedule breaks its graphs all the same): compiled calls, nested (resumed) regions = graph breaks, distinct frame ids, and
--   the eager ATen ops outside every `## Call CompiledFxGraph` inside the compiled call.
-- why: every break ends a compiled graph: the ops between graphs run eagerly (one launch each, no fusion),
--   and each resume adds guard checks and a graph call. impact_dur is the eager time between the compiled
--   regions.
-- known_problems: a model that compiles only part of its code on purpose (torch.compile on a submodule)
--   shows eager ops between regions without a break; nested regions from separately compiled submodules
--   called in sequence are not breaks.
-- example: nested_region_is_a_break_1
-- use_instead: TORCH_LOGS=graph_breaks to name each break; remove .item()/print/data-dependent python control flow
--   from the compiled function, or torch._dynamo.allow_in_graph / custom ops for the offending call.
-- needs: compile
-- claims: idle.launch, idle.host_compute, host.ops, host.python
-- status: stable
-- catalog_row: minor.torch_compile_graph_break
-- default min_breaks: 1
-- default min_eager_ops: 1

INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.host_tree;

-- Compiled regions with whether they run inside another one (a resume after a graph break).
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_compiled_regions(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- `Torch-Compiled Region: N/M`.
  name STRING,
  -- Real thread.
  origin_utid LONG,
  -- Step (or inferred iteration) of the window it starts in (kineto.lib.iterations), NULL outside every
  -- window.
  step LONG,
  -- 'Step' for a ProfilerStep window, else 'Iteration'.
  noun STRING,
  -- Slice id of the compiled region it runs inside, or NULL for an outermost region.
  outer_id LONG
) AS
WITH
  named AS (
    SELECT o.id, o.ts, o.dur, o.name, o.upid, h.origin_utid
    FROM kineto_cpu_ops AS o
    JOIN kineto_host_tree AS h
      USING (id)
    WHERE
      o.name GLOB 'Torch-Compiled Region*'
  ),
  -- each region in the window it starts in: ProfilerStep, else inferred iteration, else the capture
  regions AS (
    SELECT
      n.id, n.ts, n.dur, n.name, n.origin_utid, w.step,
      CASE WHEN it.source = 'profiler_step' THEN 'Step' ELSE 'Iteration' END AS noun
    FROM named AS n
    LEFT JOIN kineto_window_of!((SELECT id, upid, ts FROM named)) AS w
      USING (id)
    LEFT JOIN kineto_iterations AS it
      ON it.id = w.window_id
  )
SELECT
  r.*,
  (
    SELECT q.id
    FROM regions AS q
    WHERE
      q.origin_utid = r.origin_utid
      AND q.id != r.id
      AND r.ts >= q.ts
      AND r.ts + r.dur <= q.ts + q.dur
      AND (r.ts > q.ts OR r.dur < q.dur)
    ORDER BY q.ts
    LIMIT 1
  ) AS outer_id
FROM regions AS r;

-- One row per step with graph breaks or eager islands.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_compile_graph_breaks(
  -- Graph breaks (resumed regions) per step that fire.
  min_breaks LONG,
  -- Eager ATen ops inside a compiled region but outside its compiled graphs that fire on their own, with
  -- no nested region (a compiled region should run nothing but its graphs).
  min_eager_ops LONG
)
RETURNS TABLE(
  -- First compiled call start in the step.
  ts TIMESTAMP,
  -- From it to the end of the last compiled call.
  dur DURATION,
  -- Step time at stake: the eager-island time (ops inside compiled calls but outside compiled graphs).
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Outermost compiled calls in the step.
  compiled_call_count LONG,
  -- Regions resumed inside another (graph breaks).
  break_count LONG,
  -- Distinct `N/M` region names.
  distinct_regions LONG,
  -- Eager ATen ops inside the compiled calls but outside the compiled graphs.
  eager_op_count LONG,
  -- Their summed time (outermost eager ops only).
  eager_dur DURATION,
  -- graph_break (regions resumed inside another) or eager_island (eager ops in a region, no resume).
  cause STRING,
  -- The fix for this cause.
  fix STRING
) AS
WITH
  outer_calls AS (
    SELECT * FROM _kineto_catalog_compiled_regions WHERE outer_id IS NULL
  ),
  graphs AS (
    SELECT o.ts, o.dur, o.upid
    FROM kineto_cpu_ops AS o
    WHERE
      o.name GLOB '## Call CompiledFxGraph*'
      OR o.name GLOB 'CompiledFunction*'
  ),
  eager AS (
    SELECT
      c.step,
      o.id,
      o.dur,
      o.parent_id
    FROM outer_calls AS c
    JOIN kineto_host_tree AS h
      ON h.origin_utid = c.origin_utid
      AND h.ts >= c.ts
      AND h.ts < c.ts + c.dur
    JOIN kineto_cpu_ops AS o
      ON o.id = h.id
    WHERE
      NOT o.is_annotation
      AND o.name GLOB 'aten::*'
      AND NOT EXISTS (
        SELECT 1
        FROM graphs AS g
        WHERE
          g.upid = o.upid
          AND o.ts >= g.ts
          AND o.ts < g.ts + g.dur
      )
  ),
  eager_step AS (
    SELECT
      e.step,
      count(*) AS n,
      sum(CASE WHEN NOT EXISTS (SELECT 1 FROM eager AS p WHERE p.id = e.parent_id) THEN e.dur ELSE 0 END) AS d
    FROM eager AS e
    GROUP BY e.step
  ),
  per_step AS (
    SELECT
      step,
      max(noun) AS noun,
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS span,
      sum(outer_id IS NULL) AS compiled_call_count,
      sum(outer_id IS NOT NULL) AS break_count,
      count(DISTINCT name) AS distinct_regions
    FROM _kineto_catalog_compiled_regions
    WHERE
      step IS NOT NULL
    GROUP BY step
  )
SELECT
  p.ts,
  p.span AS dur,
  coalesce(e.d, 0) AS impact_dur,
  p.step,
  printf(
    '%s %d: %d graph breaks in %d compiled calls (%d distinct compiled regions); %d eager ATen ops (%.3f ms) run inside the compiled calls but outside their compiled graphs.',
    p.noun,
    p.step,
    p.break_count,
    p.compiled_call_count,
    p.distinct_regions,
    coalesce(e.n, 0),
    coalesce(e.d, 0) / 1e6
  ) AS evidence,
  p.compiled_call_count,
  p.break_count,
  p.distinct_regions,
  coalesce(e.n, 0) AS eager_op_count,
  coalesce(e.d, 0) AS eager_dur,
  CASE WHEN p.break_count >= $min_breaks THEN 'graph_break' ELSE 'eager_island' END AS cause,
  CASE
    WHEN p.break_count >= $min_breaks THEN 'TORCH_LOGS=graph_breaks to name each break; remove .item()/print/data-dependent python control flow from the compiled function, or torch._dynamo.allow_in_graph / custom ops for the offending call.'
    ELSE 'The region runs ATen ops outside its compiled graphs: TORCH_LOGS=graph_breaks,perf_hints names what dynamo left eager (an unsupported op, a fallback kernel, a .item() it skipped); check the backend (inductor compiles, eager / aot_eager do not); register the op as a custom op or move it out of the compiled function.'
  END AS fix
FROM per_step AS p
LEFT JOIN eager_step AS e
  USING (step)
WHERE
  p.break_count >= $min_breaks
  OR coalesce(e.n, 0) >= $min_eager_ops
ORDER BY p.ts;
