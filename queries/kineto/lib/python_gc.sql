-- version: 5
-- locked: 5 aa62beebf3976282
-- lib: lib.event_categories@4 lib.steps@9 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;

-- Python garbage-collection passes: Kineto's `Python GC` events (record_python_gc_info, torch >= 2.4)
-- and, with stacks, the frames of an explicit gc.collect() call. A GC pass holds the GIL and stops
-- every Python thread, so the host launches nothing while it runs. Each pass is one row with the step
-- of its own process whose window contains its start.
CREATE OR REPLACE PERFETTO TABLE kineto_python_gc(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- `Python GC` or the gc.collect frame.
  name STRING,
  -- Process.
  upid JOINID(process.id),
  -- Step number, or NULL outside steps.
  step LONG
) AS
WITH
  -- Two scans the engine filters itself (a name, a category), instead of an OR tested on every slice.
  gc AS (
    SELECT s.id, s.ts, s.dur, s.name, s.upid
    FROM kineto_thread_track_slices AS s
    WHERE
      s.name = 'Python GC'
    UNION ALL
    SELECT s.id, s.ts, s.dur, s.name, s.upid
    FROM kineto_thread_track_slices AS s
    WHERE
      s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
      AND (s.name GLOB '*gc.collect*' OR s.name GLOB '<built-in method collect of module gc*')
      AND s.name != 'Python GC'
  ),
  -- materialized: read twice (the step intersection and the result)
  located AS MATERIALIZED (
    SELECT s.id, s.ts, s.dur, s.name, s.upid
    FROM gc AS s
  ),
  -- the step of each pass by one interval intersection (kineto.lib.steps), not a lookup over the steps
  -- per pass
  steps_of AS (
    SELECT id, step FROM _kineto_steps_of!(located)
  )
SELECT
  g.id,
  g.ts,
  g.dur,
  g.name,
  g.upid,
  so.step
FROM located AS g
LEFT JOIN steps_of AS so
  USING (id)
ORDER BY g.id;
