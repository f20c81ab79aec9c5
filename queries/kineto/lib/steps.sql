-- version: 1
-- locked: 1 af97c2382df0f3cf
-- lib: lib.event_categories@1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;

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
  t.utid,
  t.upid
FROM slice AS s
JOIN kineto_event_categories AS c
  ON c.category = s.category
JOIN thread_track AS tt
  ON tt.id = s.track_id
JOIN thread AS t
  USING (utid)
WHERE
  s.name GLOB 'ProfilerStep#[0-9]*'
  AND c.event_class = 'cpu_op'
ORDER BY s.ts;

-- The step number whose window (same process) contains the timestamp, or NULL. Internal helper for
-- the other lib modules; purely syntactic, so it costs one small lookup per row.
CREATE OR REPLACE PERFETTO MACRO _kineto_step_at(
  -- Process (upid) of the event.
  upid_expr Expr,
  -- Timestamp of the event.
  ts_expr Expr
)
RETURNS Expr AS
(
  SELECT st.step
  FROM kineto_steps AS st
  WHERE
    st.upid = $upid_expr
    AND $ts_expr >= st.ts
    AND $ts_expr < st.ts + st.dur
  ORDER BY st.ts DESC
  LIMIT 1
);
