-- version: 9
-- locked: 9 4274acba64d5da77
-- lib: lib.event_categories@4 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.thread_slices;
INCLUDE PERFETTO MODULE intervals.intersect;

-- CPU-side `ProfilerStep#N` windows: one row per step slice that `torch.profiler`'s `prof.step()`
-- writes on the host. The copy Kineto puts on a GPU stream (category `gpu_user_annotation`) is not a
-- step and is excluded. Slices are found by name and category, never by thread, so a step moved to an
-- overlap lane by the loader is still found.
CREATE OR REPLACE PERFETTO TABLE kineto_steps(
  -- Slice id of the ProfilerStep#N slice.
  id JOINID(slice.id),
  -- Step number N of ProfilerStep#N.
  step LONG,
  -- Step start.
  ts TIMESTAMP,
  -- Step width (the step time).
  dur DURATION,
  -- Thread the step slice sits on.
  utid JOINID(thread.id),
  -- Process of that thread: ops of every thread of this process are assigned to the step.
  upid JOINID(process.id)
) AS
SELECT
  s.id,
  CAST(substr(s.name, 14) AS INT) AS step,
  s.ts,
  s.dur,
  s.utid,
  s.upid
FROM kineto_thread_slices AS s
WHERE
  s.name GLOB 'ProfilerStep#[0-9]*'
  AND s.event_class = 'cpu_op'
ORDER BY s.ts;

-- The steps numbered 1, 2, ... in (start, id) order: the interval intersections below carry this rank
-- instead of the slice id, so that the latest-starting step is the highest rank and a join back to the step
-- is a lookup by position (a join on kineto_steps.id would scan the steps table for every event).
CREATE OR REPLACE PERFETTO TABLE _kineto_step_ranks(
  -- Rank in (ts, id) order, from 1.
  rk LONG,
  -- Slice id of the ProfilerStep#N slice.
  id LONG,
  -- Step number N.
  step LONG,
  -- Step start.
  ts TIMESTAMP,
  -- Step width.
  dur DURATION,
  -- Process.
  upid LONG
) AS
SELECT
  row_number() OVER (ORDER BY ts, id) AS rk,
  id,
  step,
  ts,
  dur,
  upid
FROM kineto_steps
ORDER BY rk;

-- Whether two step windows of one process overlap (one starts before another ends, or both start
-- together): only then can an event be in two windows, and _kineto_steps_of must pick the latest.
CREATE OR REPLACE PERFETTO TABLE _kineto_steps_overlap(
  -- True when some step of a process starts inside an earlier (or same-start) step of that process.
  yes BOOL
) AS
SELECT coalesce(max(prev_end > ts), FALSE) AS yes
FROM (
  SELECT
    ts,
    max(ts + dur) OVER (PARTITION BY upid ORDER BY ts, id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
      AS prev_end
  FROM _kineto_step_ranks
  WHERE
    dur > 0
    AND upid IS NOT NULL
);

-- The step each event starts in, for a whole table of events at once: the CPU ProfilerStep#N window of
-- the event's process with st.ts <= ts < st.ts + st.dur (where windows of one process overlap, the
-- latest-starting one). One interval intersection (Perfetto's interval tree,
-- O((events + steps) log)), instead of a scan of the steps table per event. `events` needs columns
-- `id` (unique), `upid` and `ts`; events outside every window get no row (LEFT JOIN it on id).
CREATE OR REPLACE PERFETTO MACRO _kineto_steps_of(
  -- Table or subquery with columns id, upid, ts.
  events TableOrSubquery
)
RETURNS TableOrSubquery AS
(
  WITH
    pairs AS MATERIALIZED (
      SELECT ii.id_0, ii.id_1
      FROM _interval_intersect!(
        (
          (SELECT e.id, e.ts, 1 AS dur, e.upid FROM $events AS e WHERE e.upid IS NOT NULL AND e.ts IS NOT NULL),
          (SELECT r.rk AS id, r.ts, r.dur, r.upid FROM _kineto_step_ranks AS r WHERE r.dur > 0 AND r.upid IS NOT NULL)
        ),
        (upid)
      ) AS ii
    )
  SELECT
    p.id,
    st.step,
    st.ts AS step_ts
  FROM (
    -- windows of a process never overlap (the usual case): each event is in one window at most
    SELECT id_0 AS id, id_1 AS rk
    FROM pairs
    WHERE
      NOT (SELECT yes FROM _kineto_steps_overlap)
    UNION ALL
    -- overlapping windows: the latest-starting one (highest rank)
    SELECT id_0 AS id, max(id_1) AS rk
    FROM pairs
    WHERE
      (SELECT yes FROM _kineto_steps_overlap)
    GROUP BY id_0
  ) AS p
  -- CROSS JOIN keeps the events outside: each looks its step up by rank
  CROSS JOIN _kineto_step_ranks AS st
    ON st.rk = p.rk
);

-- The step windows of each process cut where any window of that process starts or ends, each piece
-- owned by the latest-starting window that contains it (the step an event starting there belongs to).
-- Pieces never overlap, so an event meets at most one of them: an interval intersection of events with
-- the pieces needs no per-event grouping (kineto.lib.host_slices builds its step table so, into a table of
-- its own). Where windows do not overlap (the usual case) the pieces are the windows. Steps are few: this
-- costs nothing next to the events.
CREATE OR REPLACE PERFETTO TABLE _kineto_step_pieces(
  -- Piece number.
  id LONG,
  -- Piece start.
  ts TIMESTAMP,
  -- Piece width.
  dur DURATION,
  -- Process.
  upid LONG,
  -- _kineto_step_ranks.rk of the latest-starting window containing the piece.
  rk LONG
) AS
WITH
  bounds AS (
    SELECT upid, ts AS b FROM _kineto_step_ranks WHERE dur > 0 AND upid IS NOT NULL
    UNION
    SELECT upid, ts + dur FROM _kineto_step_ranks WHERE dur > 0 AND upid IS NOT NULL
  ),
  cuts AS (
    SELECT
      row_number() OVER (ORDER BY upid, b) AS id,
      upid,
      b AS ts,
      lead(b) OVER (PARTITION BY upid ORDER BY b) - b AS dur
    FROM bounds
  ),
  owned AS (
    SELECT ii.id_0 AS id, max(ii.id_1) AS rk
    FROM _interval_intersect!(
      (
        (SELECT c.id, c.ts, 1 AS dur, c.upid FROM cuts AS c WHERE c.dur IS NOT NULL),
        (SELECT r.rk AS id, r.ts, r.dur, r.upid FROM _kineto_step_ranks AS r WHERE r.dur > 0 AND r.upid IS NOT NULL)
      ),
      (upid)
    ) AS ii
    GROUP BY ii.id_0
  )
SELECT c.id, c.ts, c.dur, c.upid, o.rk
FROM cuts AS c
JOIN owned AS o
  USING (id)
ORDER BY c.id;

-- Every (event, step) pair where the event starts inside the step's CPU ProfilerStep#N window, in any
-- process (an event inside two overlapping windows pairs with both): one interval intersection instead
-- of a join of every event against every window. `events` needs columns `id` and `ts`.
CREATE OR REPLACE PERFETTO MACRO _kineto_step_windows_of(
  -- Table or subquery with columns id, ts.
  events TableOrSubquery
)
RETURNS TableOrSubquery AS
(
  SELECT
    ii.id_0 AS id,
    st.id AS step_id,
    st.step
  FROM _interval_intersect!(
    (
      (SELECT e.id, e.ts, 1 AS dur FROM $events AS e WHERE e.ts IS NOT NULL),
      (SELECT r.rk AS id, r.ts, r.dur FROM _kineto_step_ranks AS r WHERE r.dur > 0)
    ),
    ()
  ) AS ii
  -- CROSS JOIN keeps the events outside: each looks its step up by rank
  CROSS JOIN _kineto_step_ranks AS st
    ON st.rk = ii.id_1
);
