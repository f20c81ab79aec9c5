-- version: 2
-- locked: 2 122556a9fffc35ee
-- lib: lib.event_categories@4 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;

-- Every slice of a known Kineto category (kineto_event_categories) that sits on a thread track, with what
-- its category is and the thread and process it ran on: kineto_thread_track_slices joined to the category
-- table, the one spelling of slice -> category -> thread that the lib modules filter (`WHERE event_class
-- = ...`). A view on a view, inner joins only: SQLite flattens both into each query, so a filter on the
-- category class, the name or the thread reaches the scan. Slices of unknown categories have no row (a
-- slice found by name whatever its category reads kineto_thread_track_slices).
CREATE OR REPLACE PERFETTO VIEW kineto_thread_slices(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Slice name.
  name STRING,
  -- Raw Kineto category.
  category STRING,
  -- Depth on its track.
  depth LONG,
  -- Perfetto's parent on the slice's track, or NULL at the top.
  parent_id LONG,
  -- Track the slice is on.
  track_id LONG,
  -- Arg set, for extract_arg.
  arg_set_id ARGSETID,
  -- What the category is (kineto_event_categories.event_class): cpu_op, python, runtime, gpu...
  event_class STRING,
  -- For gpu rows: kernel, memcpy or memset; NULL otherwise.
  gpu_kind STRING,
  -- True for record_function / user annotations.
  is_annotation BOOL,
  -- Thread of the track (an overlap lane keeps its own utid).
  utid JOINID(thread.id),
  -- Thread id as written (tid).
  tid LONG,
  -- Thread name.
  thread_name STRING,
  -- Process of that thread.
  upid JOINID(process.id)
) AS
SELECT
  s.id,
  s.ts,
  s.dur,
  s.name,
  s.category,
  s.depth,
  s.parent_id,
  s.track_id,
  s.arg_set_id,
  c.event_class,
  c.gpu_kind,
  c.is_annotation,
  s.utid,
  s.tid,
  s.thread_name,
  s.upid
FROM kineto_thread_track_slices AS s
JOIN kineto_event_categories AS c
  ON c.category = s.category;
