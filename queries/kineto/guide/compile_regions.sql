-- id: guide.compile_regions
-- version: 4
-- kind: guide
-- title: Compiled regions: Dynamo cache lookup, Torch-Compiled Region, AOTDispatcher prologue and CompiledFxGraph per call; CPU overhead vs device time
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "The Impact of torch.compile:
--   Runtime Architecture and Overhead"
-- needs: compile
-- status: stable

-- One row per `Torch-Compiled Region` call. The pieces are matched by time inside the caller's process
-- (Kineto does not always nest them): the `TorchDynamo Cache Lookup` that ends last before the region
-- starts, and the `AOTDispatcher Runtime Wrapper Prologue` and `## Call CompiledFxGraph <hash> ##` rows
-- starting inside it. CPU overhead = cache lookup + region time outside the compiled graph. Device time =
-- device activities launched while the region ran. For very small graphs the overhead can exceed the
-- work done; it amortizes as the graph grows.

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;

-- One row per compiled-region call.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_compile_regions()
RETURNS TABLE(
  -- Slice id of the Torch-Compiled Region row.
  region_id LONG,
  -- Region start.
  ts TIMESTAMP,
  -- Region duration.
  dur DURATION,
  -- Step of the call, or NULL.
  step LONG,
  -- Region name, e.g. `Torch-Compiled Region: 0/0`.
  region STRING,
  -- Duration of the preceding TorchDynamo Cache Lookup, or NULL.
  cache_lookup_dur DURATION,
  -- Duration of the AOTDispatcher Runtime Wrapper Prologue inside it, or NULL.
  prologue_dur DURATION,
  -- The CompiledFxGraph row name (with its content hash), or NULL.
  graph STRING,
  -- Its duration (the generated code running on the CPU).
  graph_dur DURATION,
  -- ATen ops started inside the region.
  ops LONG,
  -- cache lookup + region time outside the graph.
  overhead_dur DURATION,
  -- Device time of activities launched inside the region, or NULL without device activity.
  device_dur DURATION,
  -- overhead-dominated (overhead above the device time, or above the graph's CPU time without device
  -- activity) or work-dominated.
  reading STRING,
  -- One sentence with the numbers.
  evidence STRING
) AS
WITH
  regions AS (
    SELECT
      s.id,
      s.ts,
      s.dur,
      s.name,
      s.upid
    FROM kineto_thread_track_slices AS s
    WHERE
      s.name GLOB 'Torch-Compiled Region*'
  ),
  host AS (
    SELECT
      s.id,
      s.ts,
      s.dur,
      s.name,
      s.category,
      s.upid
    FROM kineto_thread_track_slices AS s
    WHERE
      s.name = 'TorchDynamo Cache Lookup'
      OR s.name = 'AOTDispatcher Runtime Wrapper Prologue'
      OR (s.name GLOB '## Call CompiledFxGraph*' AND s.category NOT IN (
        SELECT category FROM kineto_event_categories WHERE event_class = 'gpu_annotation'
      ))
  ),
  region_steps AS (
    SELECT id, step FROM _kineto_steps_of!(regions)
  ),
  pieces AS (
    SELECT
      r.*,
      (
        SELECT h.dur
        FROM host AS h
        WHERE
          h.upid = r.upid
          AND h.name = 'TorchDynamo Cache Lookup'
          AND h.ts <= r.ts
          AND h.ts + h.dur <= r.ts + 1000
          AND NOT EXISTS (
            SELECT 1
            FROM regions AS r2
            WHERE
              r2.upid = r.upid
              AND r2.ts < r.ts
              AND r2.ts > h.ts
          )
        ORDER BY h.ts DESC
        LIMIT 1
      ) AS cache_dur,
      (
        SELECT sum(h.dur)
        FROM host AS h
        WHERE
          h.upid = r.upid
          AND h.name = 'AOTDispatcher Runtime Wrapper Prologue'
          AND h.ts >= r.ts
          AND h.ts < r.ts + r.dur
      ) AS prologue_dur,
      (
        SELECT h.name
        FROM host AS h
        WHERE
          h.upid = r.upid
          AND h.name GLOB '## Call CompiledFxGraph*'
          AND h.ts >= r.ts
          AND h.ts < r.ts + r.dur
        ORDER BY h.ts
        LIMIT 1
      ) AS graph,
      (
        SELECT sum(h.dur)
        FROM host AS h
        WHERE
          h.upid = r.upid
          AND h.name GLOB '## Call CompiledFxGraph*'
          AND h.ts >= r.ts
          AND h.ts < r.ts + r.dur
      ) AS graph_dur,
      (
        SELECT count(*)
        FROM kineto_thread_track_slices AS s
        WHERE
          s.upid = r.upid
          AND s.category IN (
            SELECT category FROM kineto_event_categories WHERE event_class = 'cpu_op' AND NOT is_annotation
          )
          AND s.name GLOB 'aten::*'
          AND s.ts >= r.ts
          AND s.ts < r.ts + r.dur
      ) AS ops,
      (
        SELECT sum(l.gpu_dur)
        FROM kineto_launches AS l
        WHERE
          l.upid = r.upid
          AND l.ts >= r.ts
          AND l.ts < r.ts + r.dur
      ) AS device_dur,
      rs.step
    FROM regions AS r
    LEFT JOIN region_steps AS rs
      USING (id)
  ),
  read AS (
    SELECT
      p.*,
      coalesce(p.cache_dur, 0) + p.dur - coalesce(p.graph_dur, 0) AS overhead
    FROM pieces AS p
  )
SELECT
  id AS region_id,
  ts,
  dur,
  step,
  name AS region,
  cache_dur AS cache_lookup_dur,
  prologue_dur,
  graph,
  graph_dur,
  ops,
  overhead AS overhead_dur,
  device_dur,
  CASE
    WHEN overhead > CASE WHEN device_dur > 0 THEN device_dur ELSE coalesce(graph_dur, 0) END
      THEN 'overhead-dominated'
    ELSE 'work-dominated'
  END AS reading,
  printf(
    '%s: cache lookup %.1f us + region %.1f us, compiled graph %.1f us on the CPU (%d ATen ops), device %s; CPU overhead %.1f us per call (%s)',
    name,
    coalesce(cache_dur, 0) / 1e3,
    dur / 1e3,
    coalesce(graph_dur, 0) / 1e3,
    ops,
    coalesce(printf('%.1f us', device_dur / 1e3), 'none recorded'),
    overhead / 1e3,
    CASE
      WHEN overhead > CASE WHEN device_dur > 0 THEN device_dur ELSE coalesce(graph_dur, 0) END
        THEN 'the Dynamo -> AOTAutograd -> Inductor stack costs more than the work; amortizes with larger graphs'
      ELSE 'the work dominates the wrapper cost'
    END
  ) AS evidence
FROM read
ORDER BY ts;
