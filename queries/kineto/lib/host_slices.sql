-- version: 9

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;

-- The host categories (kineto_event_categories of class cpu_op, python or runtime).
CREATE OR REPLACE PERFETTO TABLE _kineto_host_categories(
  -- Raw category.
  category STRING,
  -- cpu_op, python or runtime.
  event_class STRING
) AS
SELECT category, event_class
FROM kineto_event_categories
WHERE
  event_class IN ('cpu_op', 'python', 'runtime');

-- Thread tracks with their thread and process, ordered by track. The two scans below spell
-- kineto_thread_slices out as one pass over `slice` in id order (filtered on the host categories) that
-- looks its track and category up in these small tables: SQLite's own order for the view scans the slices
-- per (category, track) and looks the thread up per slice, then sorts everything by id.
CREATE OR REPLACE PERFETTO TABLE _kineto_host_tracks(
  -- Thread track id.
  track_id LONG,
  -- Its thread (an overlap lane keeps its own utid).
  utid LONG,
  -- Process of that thread.
  upid LONG
) AS
SELECT tt.id AS track_id, tt.utid, t.upid
FROM thread_track AS tt
JOIN thread AS t
  USING (utid)
ORDER BY tt.id;

-- The step of each non-overlapping step piece of kineto.lib.steps (what _kineto_steps_of answers, without
-- its per-event grouping for overlapping windows): few rows, ordered by start.
CREATE OR REPLACE PERFETTO TABLE _kineto_host_step_pieces(
  -- Piece start.
  ts TIMESTAMP,
  -- Piece width.
  dur DURATION,
  -- Process.
  upid LONG,
  -- Step number.
  step LONG
) AS
SELECT pc.ts, pc.dur, pc.upid, st.step
FROM _kineto_step_pieces AS pc
CROSS JOIN _kineto_step_ranks AS st
  ON st.rk = pc.rk
ORDER BY pc.ts;

-- Step of each host slice (slices outside every step window have no row): for each step piece (the outer
-- loop, forced by CROSS JOIN), the slices that start in it, found by a binary search on `slice`'s sorted
-- starts, kept where they are host slices of the piece's process. Cost: pieces x log(slices) plus the
-- slices inside the pieces (once per process with a piece there); no sorted copy of the host slices is
-- built first. Built into a table ordered by id: the join below is a lookup by id.
CREATE OR REPLACE PERFETTO TABLE _kineto_host_slice_steps(
  -- Slice id.
  id LONG,
  -- Step number.
  step LONG
) AS
SELECT s.id, pc.step
FROM _kineto_host_step_pieces AS pc
CROSS JOIN slice AS s
  ON s.ts >= pc.ts
  AND s.ts < pc.ts + pc.dur
CROSS JOIN _kineto_host_tracks AS k
  ON k.track_id = s.track_id
  AND k.upid = pc.upid
WHERE
  s.category IN (SELECT category FROM _kineto_host_categories)
ORDER BY s.id;

-- Every host-side slice (ATen ops and annotations, python frames, runtime calls) once, with its step
-- and, for runtime calls, the op it was called from: built once per trace (one interval intersection
-- for the steps) so that queries join it by id instead of looking steps up per row. Ordered by id:
-- a join on id is a binary search.
CREATE OR REPLACE PERFETTO TABLE kineto_host_slices(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Slice name.
  name STRING,
  -- Raw category.
  category STRING,
  -- cpu_op, python or runtime (kineto_event_categories).
  event_class STRING,
  -- Depth on its track.
  depth LONG,
  -- Perfetto's parent on the slice's track (it contains the slice), or NULL at the top.
  parent_id LONG,
  -- Thread the slice sits on (an overlap lane keeps its own utid).
  utid JOINID(thread.id),
  -- Process of that thread.
  upid JOINID(process.id),
  -- Step number N of the CPU ProfilerStep#N window (same process) the slice starts in, or NULL.
  step LONG,
  -- For runtime calls: the innermost enclosing CPU op or annotation (the op that made the call), or
  -- NULL; NULL for ops and python frames.
  op_id LONG
) AS
WITH
  host AS (
    SELECT
      s.id,
      s.ts,
      s.dur,
      s.name,
      s.category,
      c.event_class,
      s.depth,
      s.parent_id,
      k.utid,
      k.upid
    FROM slice AS s
    CROSS JOIN _kineto_host_tracks AS k
      ON k.track_id = s.track_id
    CROSS JOIN _kineto_host_categories AS c
      ON c.category = s.category
    WHERE
      s.category IN (SELECT category FROM _kineto_host_categories)
  )
SELECT
  h.id,
  h.ts,
  h.dur,
  h.name,
  h.category,
  h.event_class,
  h.depth,
  h.parent_id,
  h.utid,
  h.upid,
  so.step,
  CASE
    WHEN h.event_class != 'runtime' THEN NULL
    -- Almost always the direct parent; otherwise walk up (python frames may sit in between).
    WHEN p.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'cpu_op') THEN h.parent_id
    WHEN h.parent_id IS NULL THEN NULL
    ELSE (
      SELECT a.id
      FROM ancestor_slice(h.id) AS a
      JOIN kineto_event_categories AS ac
        ON ac.category = a.category
      WHERE
        ac.event_class = 'cpu_op'
      ORDER BY a.depth DESC
      LIMIT 1
    )
  END AS op_id
FROM host AS h
LEFT JOIN _kineto_host_slice_steps AS so
  ON so.id = h.id
LEFT JOIN slice AS p
  ON p.id = h.parent_id
ORDER BY h.id;
