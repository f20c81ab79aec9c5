-- version: 4
-- locked: 4 b2573f3d244c5e2c
-- lib: lib.event_categories@4 lib.steps@9 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.thread_slices;
INCLUDE PERFETTO MODULE kineto.lib.steps;

-- DataLoader `next()` calls seen from the main process: the `enumerate(DataLoader)#<Iter>.__next__`
-- annotations torch writes around every batch fetch, or, on traces without them, the python frames of
-- torch/utils/data/dataloader.py `__next__` (with_stack captures). `iter_kind` says where the batch was
-- made: `in_process` (_SingleProcessDataLoaderIter: the loading work runs inside the call and is in the
-- trace), `workers` (_MultiProcessingDataLoaderIter: the call only waits on worker processes, whose work
-- the profiler does not see) or `unknown`.
CREATE OR REPLACE PERFETTO TABLE kineto_dataloader(
  -- Slice id of the annotation or frame.
  id JOINID(slice.id),
  -- Call start.
  ts TIMESTAMP,
  -- Call duration (time the step waited for its batch).
  dur DURATION,
  -- Annotation or frame name.
  name STRING,
  -- `annotation` or `python_frame`.
  source STRING,
  -- `in_process`, `workers` or `unknown`.
  iter_kind STRING,
  -- Process.
  upid JOINID(process.id),
  -- Step number of the ProfilerStep#N window holding the call's start, or NULL.
  step LONG
) AS
WITH
  annotations AS (
    SELECT s.id, s.ts, s.dur, s.name, 'annotation' AS source, s.upid
    FROM kineto_thread_slices AS s
    WHERE
      s.event_class = 'cpu_op'
      AND s.name GLOB 'enumerate(DataLoader)#*__next__*'
  ),
  frames AS (
    SELECT s.id, s.ts, s.dur, s.name, 'python_frame' AS source, s.upid
    FROM kineto_thread_slices AS s
    WHERE
      s.event_class = 'python'
      AND s.name GLOB '*torch/utils/data/dataloader.py(*): __next__'
      AND NOT EXISTS (SELECT 1 FROM annotations)
  ),
  calls AS (
    SELECT * FROM annotations
    UNION ALL
    SELECT * FROM frames
  ),
  steps_of AS (
    SELECT id, step FROM _kineto_steps_of!(calls)
  )
SELECT
  c.id,
  c.ts,
  c.dur,
  c.name,
  c.source,
  CASE
    WHEN c.name GLOB '*_SingleProcessDataLoaderIter*' THEN 'in_process'
    WHEN c.name GLOB '*_MultiProcessingDataLoaderIter*' THEN 'workers'
    WHEN c.source = 'python_frame' AND EXISTS (
      SELECT 1
      FROM descendant_slice(c.id) AS d
      WHERE
        d.name GLOB '*dataloader.py(*): _next_data'
        AND EXISTS (
          SELECT 1
          FROM descendant_slice(d.id) AS e
          WHERE
            e.name GLOB '*dataloader.py(*): _get_data'
            OR e.name GLOB '*dataloader.py(*): _try_get_data'
        )
    ) THEN 'workers'
    ELSE 'unknown'
  END AS iter_kind,
  c.upid,
  so.step
FROM calls AS c
LEFT JOIN steps_of AS so
  USING (id)
ORDER BY c.ts;
