-- version: 5

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE intervals.intersect;

-- For every thread, the thread it really is: the loader's overlap lanes (threads named
-- `<thread name> (overlap lane N)`, holding X events v52 would drop) map back to their thread. Without
-- lanes (a trace loaded elsewhere) every thread maps to itself.
CREATE OR REPLACE PERFETTO TABLE _kineto_thread_origin(
  -- A thread.
  utid LONG,
  -- The thread its events belong to.
  origin_utid LONG
) AS
WITH
  lanes AS (
    SELECT
      t.utid,
      t.upid,
      substr(t.name, 1, instr(t.name, ' (overlap lane ') - 1) AS base
    FROM thread AS t
    WHERE
      t.name GLOB '* (overlap lane [0-9]*)'
  )
SELECT
  t.utid,
  coalesce(
    (
      SELECT o.utid
      FROM lanes AS l
      JOIN thread AS o
        ON o.upid = l.upid
        AND o.utid != l.utid
        AND coalesce(o.name, 'thread ' || o.tid) = l.base
      WHERE
        l.utid = t.utid
      ORDER BY o.utid
      LIMIT 1
    ),
    t.utid
  ) AS origin_utid
FROM thread AS t
ORDER BY t.utid;

-- Every host slice of a thread that has overlap lanes, with its lane (utid) and its thread (origin_utid):
-- no rows without lanes. Ordered by id.
CREATE OR REPLACE PERFETTO TABLE _kineto_host_lane_slices(
  -- Host slice.
  id LONG,
  -- Start.
  ts TIMESTAMP,
  -- Duration (> 0).
  dur DURATION,
  -- Its lane (a thread, or an overlap lane of one).
  utid LONG,
  -- Perfetto's parent.
  parent_id LONG,
  -- The thread the lane belongs to.
  origin_utid LONG
) AS
SELECT
  h.id,
  h.ts,
  h.dur,
  h.utid,
  h.parent_id,
  o.origin_utid
FROM kineto_host_slices AS h
CROSS JOIN _kineto_thread_origin AS o
  ON o.utid = h.utid
WHERE
  h.utid IN (
    SELECT utid
    FROM _kineto_thread_origin
    WHERE
      origin_utid IN (SELECT origin_utid FROM _kineto_thread_origin WHERE utid != origin_utid)
  )
  AND h.dur > 0
ORDER BY h.id;

-- Cross-lane containment that can decide a parent: pairs (container, contained) of host slices on
-- different lanes of one thread where the container comes first in torch's order (start, then longer
-- first, then id), among the pairs where the contained slice's Perfetto parent is no host slice or
-- contains the container's start. The other pairs never decide a parent: a Perfetto parent that starts
-- after the container, inside it, is later in torch's order than the container, so it wins
-- (_kineto_host_tree_contested takes the latest). Listing only these is what keeps the table small when
-- one long slice on a lane (a ProfilerStep the loader moved) contains every op of the thread: its
-- containers are the lane slices and the slices that contain a lane slice's start; the slices inside a
-- container that can pick it are among the roots and the children of the slices open at a container's
-- start (two point intersections, then one of the containers with those), not every slice inside it.
CREATE OR REPLACE PERFETTO TABLE _kineto_host_cross_lane(
  -- The slice that contains.
  container_id LONG,
  -- The slice inside it.
  child_id LONG
) AS
WITH
  lane_starts AS (
    SELECT id, ts, 1 AS dur, origin_utid FROM _kineto_host_lane_slices WHERE utid != origin_utid
  ),
  all_spans AS (
    SELECT id, ts, dur, origin_utid FROM _kineto_host_lane_slices
  ),
  -- slices that can contain a slice of another lane: the lane slices, and the slices open at a lane
  -- slice's start
  containers AS MATERIALIZED (
    SELECT id FROM _kineto_host_lane_slices WHERE utid != origin_utid
    UNION
    SELECT id_1 FROM _interval_intersect!((lane_starts, all_spans), (origin_utid))
  ),
  container_starts AS (
    SELECT g.id, g.ts, 1 AS dur, g.origin_utid
    FROM containers AS c
    CROSS JOIN _kineto_host_lane_slices AS g
      USING (id)
  ),
  container_spans AS (
    SELECT g.id, g.ts, g.dur, g.origin_utid
    FROM containers AS c
    CROSS JOIN _kineto_host_lane_slices AS g
      USING (id)
  ),
  -- the slices open at a container's start
  open_at_start AS (
    SELECT id_1 AS id
    FROM _interval_intersect!((container_starts, all_spans), (origin_utid))
  ),
  -- the slices that can have a container of another lane as torch parent: those whose Perfetto parent is
  -- no host slice, and the children of a slice open at a container's start
  inner_slices AS (
    SELECT g.id, g.ts, g.dur, g.origin_utid
    FROM _kineto_host_lane_slices AS g
    LEFT JOIN kineto_host_slices AS p
      ON p.id = g.parent_id
    WHERE
      p.id IS NULL
      OR g.parent_id IN (SELECT id FROM open_at_start)
  ),
  -- each container with those of them it overlaps (one interval intersection: a container meets only the
  -- slices near it, not every child of a long slice open at its start)
  candidates AS (
    SELECT id_0 AS container_id, id_1 AS child_id
    FROM _interval_intersect!((container_spans, inner_slices), (origin_utid))
  )
SELECT DISTINCT
  c.id AS container_id,
  x.id AS child_id
FROM candidates AS k
CROSS JOIN kineto_host_slices AS c
  ON c.id = k.container_id
CROSS JOIN kineto_host_slices AS x
  ON x.id = k.child_id
WHERE
  x.utid != c.utid
  AND x.ts >= c.ts
  AND x.ts + x.dur <= c.ts + c.dur
  AND (x.ts > c.ts OR x.dur < c.dur OR (x.dur = c.dur AND x.id > c.id));

-- The parent in torch's tree of each slice with a container on another lane (the loader's overlap lanes):
-- the latest-starting candidate (start, then shorter, then higher id) among those containers and
-- Perfetto's parent. Few rows (none without lanes), ordered by child for the lookup by id.
CREATE OR REPLACE PERFETTO TABLE _kineto_host_tree_contested(
  -- The contested slice.
  child_id LONG,
  -- Its parent in torch's tree.
  container_id LONG
) AS
WITH
  -- per contested slice: its number of cross-lane containers (one for almost all: a slice on a lane
  -- around a stretch of the thread) and, for those with one, which
  contested AS MATERIALIZED (
    SELECT child_id, count(*) AS n, min(container_id) AS container_id
    FROM _kineto_host_cross_lane
    GROUP BY child_id
  ),
  -- one cross-lane container: it against Perfetto's parent, compared in place (no window over all of them)
  single AS (
    SELECT
      x.child_id,
      CASE
        WHEN p.id IS NULL THEN c.id
        WHEN c.ts > p.ts OR (c.ts = p.ts AND (c.dur < p.dur OR (c.dur = p.dur AND c.id > p.id))) THEN c.id
        ELSE p.id
      END AS container_id
    FROM contested AS x
    CROSS JOIN kineto_host_slices AS c
      ON c.id = x.container_id
    CROSS JOIN kineto_host_slices AS h
      ON h.id = x.child_id
    LEFT JOIN kineto_host_slices AS p
      ON p.id = h.parent_id
    WHERE
      x.n = 1
  ),
  -- several: ranked
  several AS (
    SELECT child_id FROM contested WHERE n > 1
  ),
  ranked AS (
    SELECT
      c.child_id,
      c.container_id,
      row_number() OVER (
        PARTITION BY c.child_id
        ORDER BY p.ts DESC, p.dur ASC, p.id DESC
      ) AS rn
    FROM (
      SELECT l.child_id, l.container_id
      FROM _kineto_host_cross_lane AS l
      WHERE
        -- `+`: the list is looked up per row, not handed to the table as an IN constraint (10x slower)
        +l.child_id IN (SELECT child_id FROM several)
      UNION ALL
      SELECT h.id, h.parent_id
      FROM several AS x
      CROSS JOIN kineto_host_slices AS h
        ON h.id = x.child_id
      WHERE
        h.parent_id IS NOT NULL
    ) AS c
    CROSS JOIN kineto_host_slices AS p
      ON p.id = c.container_id
  )
SELECT child_id, container_id
FROM (
  SELECT child_id, container_id FROM single
  UNION ALL
  SELECT child_id, container_id FROM ranked WHERE rn = 1
)
ORDER BY child_id;

-- The parent of every host slice in torch's tree: Perfetto's parent when it is a host slice, except for
-- the contested slices above. The common case is one lookup by id per slice.
CREATE OR REPLACE PERFETTO TABLE _kineto_host_tree_parents(
  -- Slice id.
  id LONG,
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Thread (maybe an overlap lane).
  utid LONG,
  -- The real thread.
  origin_utid LONG,
  -- Parent in torch's tree, or NULL at the top.
  parent_id LONG
) AS
SELECT
  h.id,
  h.ts,
  h.dur,
  h.utid,
  h.origin_utid,
  CASE WHEN ch.child_id IS NOT NULL THEN ch.container_id ELSE p.id END AS parent_id
FROM (
  SELECT h.id, h.ts, h.dur, h.utid, o.origin_utid, h.parent_id
  FROM kineto_host_slices AS h
  CROSS JOIN _kineto_thread_origin AS o
    ON o.utid = h.utid
) AS h
LEFT JOIN kineto_host_slices AS p
  ON p.id = h.parent_id
LEFT JOIN _kineto_host_tree_contested AS ch
  ON ch.child_id = h.id
ORDER BY h.id;

-- Number and summed duration of the direct children of each parent in torch's tree, ordered by parent.
CREATE OR REPLACE PERFETTO TABLE _kineto_host_tree_children(
  -- Parent slice id.
  parent_id LONG,
  -- Summed duration of its children.
  child_dur DURATION,
  -- Number of its children.
  child_count LONG
) AS
SELECT
  parent_id,
  sum(dur) AS child_dur,
  count(*) AS child_count
FROM _kineto_host_tree_parents
WHERE
  parent_id IS NOT NULL
GROUP BY parent_id
ORDER BY parent_id;

-- Every host-side slice (ops, annotations, python frames, runtime calls) in the tree torch's profiler
-- builds per thread for key_averages(): sorted by start (longer first), each event's parent is the
-- latest-starting earlier event that still contains it. For properly nested slices that is Perfetto's
-- parent; where ranges overlap without nesting (the loader's overlap lanes) the parent may sit on
-- another lane. Self time is the duration minus the children's durations, as torch computes it (it
-- can be negative when overlapping children are both counted).
CREATE OR REPLACE PERFETTO TABLE kineto_host_tree(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration (CPU total).
  dur DURATION,
  -- Self time: dur minus the durations of the direct children in this tree.
  self_dur DURATION,
  -- Parent in this tree, or NULL at the top.
  parent_id LONG,
  -- Number of direct children in this tree.
  child_count LONG,
  -- Thread the slice sits on (an overlap lane keeps its own utid).
  utid JOINID(thread.id),
  -- The real thread: lanes mapped back.
  origin_utid JOINID(thread.id)
) AS
SELECT
  h.id,
  h.ts,
  h.dur,
  h.dur - coalesce(cs.child_dur, 0) AS self_dur,
  h.parent_id,
  coalesce(cs.child_count, 0) AS child_count,
  h.utid,
  h.origin_utid
FROM _kineto_host_tree_parents AS h
LEFT JOIN _kineto_host_tree_children AS cs
  ON cs.parent_id = h.id
ORDER BY h.id;
