-- version: 8
-- locked: 8 85631a7b3fdd6d64
-- lib: lib.event_categories@2 lib.thread_slices@2 lib.thread_track_slices@1

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

-- The step windows of each process cut where any window of that process starts or ends, each piece
-- owned by the latest-starting window that contains it (the step an event starting there belongs to).
-- Pieces never overlap, so an event meets at most one of them and _kineto_steps_of needs no
-- per-event grouping; where windows do not overlap (the usual case) the pieces are the windows.
-- Steps are few: this costs nothing next to the events.
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

-- The step each event starts in, for a whole table of events at once: the CPU ProfilerStep#N window of
-- the event's process with st.ts <= ts < st.ts + st.dur (where windows of one process overlap, the
-- latest-starting one). One interval intersection with the non-overlapping _kineto_step_pieces
-- (Perfetto's interval tree, O((events + steps) log)), instead of a scan of the steps table per event.
-- `events` needs columns `id` (unique), `upid` and `ts`; events outside every window get no row (LEFT
-- JOIN it on id).
CREATE OR REPLACE PERFETTO MACRO _kineto_steps_of(
  -- Table or subquery with columns id, upid, ts.
  events TableOrSubquery
)
RETURNS TableOrSubquery AS
(
  SELECT
    ii.id_0 AS id,
    st.step,
    st.ts AS step_ts
  FROM _interval_intersect!(
    (
      (SELECT e.id, e.ts, 1 AS dur, e.upid FROM $events AS e WHERE e.upid IS NOT NULL AND e.ts IS NOT NULL),
      (SELECT pc.id, pc.ts, pc.dur, pc.upid FROM _kineto_step_pieces AS pc)
    ),
    (upid)
  ) AS ii
  -- CROSS JOIN keeps the events outside: each looks its piece, then its step, up by position
  CROSS JOIN _kineto_step_pieces AS pc
    ON pc.id = ii.id_1
  CROSS JOIN _kineto_step_ranks AS st
    ON st.rk = pc.rk
);

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
