-- version: 1

-- Every slice that sits on a thread track, with the thread and process it ran on, whatever its category
-- (known, unknown or none): the one spelling of slice -> thread_track -> thread. For slices found by
-- name or by a raw category (`Python GC`, `Torch-Compiled Region*`, `overhead`), or joined by id from
-- another table. No category class here: a LEFT JOIN of kineto_event_categories would cost every query a
-- lookup per row and fix the join order; kineto.lib.thread_slices adds the class for the known ones.
-- A view of inner joins only: SQLite flattens it into each query, so a filter on the name, the category
-- or the thread reaches the scan as if the join were written out there. Slices on other tracks
-- (counters, async tracks) have no row. The process pid is not here (a LEFT JOIN process costs every
-- query a lookup per row): join `process` on upid where a pid is needed.
CREATE OR REPLACE PERFETTO VIEW kineto_thread_track_slices(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Slice name.
  name STRING,
  -- Raw Kineto category, as written (may be NULL or unknown).
  category STRING,
  -- Depth on its track.
  depth LONG,
  -- Perfetto's parent on the slice's track, or NULL at the top.
  parent_id LONG,
  -- Track the slice is on.
  track_id LONG,
  -- Arg set, for extract_arg.
  arg_set_id ARGSETID,
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
  tt.utid,
  t.tid,
  t.name AS thread_name,
  t.upid
FROM slice AS s
JOIN thread_track AS tt
  ON tt.id = s.track_id
JOIN thread AS t
  USING (utid);
