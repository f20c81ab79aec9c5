-- version: 12

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.dataloader;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.launches;

-- The markers an iteration can be inferred from (kineto_iterations, on traces without ProfilerStep
-- windows), one row per (kind, host-slice class): the first kind by priority whose marker repeats wins.
-- `dataloader` markers are kineto_dataloader's calls (its row matches no host slice); the others are host
-- slices of the main process of that class (and raw category, where given) whose name matches. A start
-- marker opens a window that runs to the next start; an end marker closes one that ran from the previous
-- end; a span marker is a range the user put around one unit of work (record_function): its window is
-- the range itself. `per_name`: every distinct name is a candidate marker of its own (the one that repeats most wins);
-- otherwise all names of the kind are one marker (Optimizer.step#SGD.step and #Adam.step alike).
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_marker_rules(
  -- dataloader, optimizer_step, module_forward, record_function, execute_model or annotation.
  kind STRING,
  -- Lower wins when several kinds repeat.
  priority LONG,
  -- `start`, `end` or `span`: which end of the marker cuts the windows, or the marker's own range.
  anchor STRING,
  -- True when each name is a marker of its own.
  per_name BOOL,
  -- kineto_event_categories.event_class of the host slice (NULL for dataloader).
  event_class STRING,
  -- Raw category the slice must have as well, or NULL.
  category STRING,
  -- GLOB over the slice name (NULL for dataloader).
  name_glob STRING
) AS
WITH rules(kind, priority, anchor, per_name, event_class, category, name_glob) AS (
  VALUES
    ('dataloader', 1, 'start', FALSE, NULL, NULL, NULL),
    ('optimizer_step', 2, 'end', FALSE, 'cpu_op', NULL, 'Optimizer.step#*'),
    ('module_forward', 3, 'start', TRUE, 'python', NULL, 'nn.Module: *'),
    ('record_function', 4, 'span', TRUE, 'cpu_op', NULL, '## * ##'),
    ('execute_model', 5, 'start', TRUE, 'cpu_op', NULL, '*execute_model*'),
    ('execute_model', 5, 'start', TRUE, 'python', NULL, '*execute_model*'),
    -- any CPU user annotation (user_annotation is of class cpu_op)
    ('annotation', 6, 'span', TRUE, 'cpu_op', 'user_annotation', '*')
)
SELECT
  kind,
  priority,
  anchor,
  per_name,
  event_class,
  category,
  name_glob
FROM rules;

-- Names a rule's pattern matches that are no marker of that kind: the generic `annotation` kind leaves
-- out the annotations that are other markers (or steps).
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_marker_exclusions(
  -- Kind of _kineto_iteration_marker_rules.
  kind STRING,
  -- GLOB over the slice name.
  name_glob STRING
) AS
WITH excluded(kind, name_glob) AS (
  VALUES
    ('annotation', 'ProfilerStep#*'),
    ('annotation', 'enumerate(DataLoader)#*'),
    ('annotation', 'Optimizer.*')
)
SELECT
  kind,
  name_glob
FROM excluded;

-- The windows of kineto_iterations (below) before the cold-start test: one row per window, numbered per
-- process in time order. A table of its own, as is each step of the cold-start test after it: SQLite sizes
-- the Bloom filters of a join from its row estimate, and a subquery's estimate is far above a table's exact
-- count (one statement held a dozen of them: tens of MB of the engine's heap, never given back).
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_windows(
  -- Window id, unique in the trace, in time order per process.
  id LONG,
  -- Process whose iteration this is.
  upid JOINID(process.id),
  -- Window start.
  ts TIMESTAMP,
  -- Window width.
  dur DURATION,
  -- Iteration number.
  step LONG,
  -- How the window was found (kineto_iterations.source).
  source STRING,
  -- The marker the windows were cut at.
  marker STRING
) AS
WITH
  -- host slices from the shared table (built once per trace)
  host AS (
    SELECT
      h.id,
      h.ts,
      h.dur,
      h.name,
      h.category,
      h.depth,
      h.event_class,
      h.upid,
      h.utid,
      h.parent_id
    FROM kineto_host_slices AS h
    WHERE
      h.dur >= 0
  ),
  main_process AS (
    SELECT upid
    FROM host
    WHERE
      upid IS NOT NULL
    GROUP BY upid
    ORDER BY count(*) DESC, upid
    LIMIT 1
  ),
  has_steps AS (
    SELECT EXISTS (SELECT 1 FROM kineto_steps) AS yes
  ),
  -- the device lags the step windows: its first activity starts after the last step ends (header, 1.)
  steps_lagged AS (
    SELECT
      (SELECT yes FROM has_steps)
      AND (SELECT min(ts) FROM kineto_kernels) >= (SELECT max(ts + dur) FROM kineto_steps) AS yes
  ),
  capture AS (
    SELECT min(ts) AS ts, max(ts + dur) AS end_ts
    FROM slice
    WHERE
      dur >= 0
  ),
  -- candidate markers of the main process, one scan per rule (_kineto_iteration_marker_rules):
  -- (kind, priority, name, ts, end_ts, anchor: start or end, depth)
  candidates AS (
    SELECT r.kind, r.priority, d.name, d.ts, d.ts + d.dur AS end_ts, r.anchor, 0 AS depth, t.utid
    FROM _kineto_iteration_marker_rules AS r
    CROSS JOIN kineto_dataloader AS d
    JOIN kineto_thread_track_slices AS t
      ON t.id = d.id
    WHERE
      r.kind = 'dataloader'
      AND d.upid = (SELECT upid FROM main_process)
      -- with ProfilerStep windows no marker is used: skip the scans
      AND NOT (SELECT yes FROM has_steps)
    UNION ALL
    -- the rule drives: its class and name pattern reach the scan of the host slices as constants
    SELECT r.kind, r.priority, h.name, h.ts, h.ts + h.dur, r.anchor, h.depth, h.utid
    FROM _kineto_iteration_marker_rules AS r
    CROSS JOIN host AS h
      ON h.event_class = r.event_class
      AND h.name GLOB r.name_glob
    WHERE
      r.kind != 'dataloader'
      AND h.upid = (SELECT upid FROM main_process)
      AND (r.category IS NULL OR h.category = r.category)
      AND NOT EXISTS (
        SELECT 1
        FROM _kineto_iteration_marker_exclusions AS x
        WHERE
          x.kind = r.kind
          AND h.name GLOB x.name_glob
      )
      AND NOT (SELECT yes FROM has_steps)
  ),
  -- per (kind, name, thread): only the outermost occurrences count (a marker nested in a same-name marker is a
  -- recursion or a sub-call, not a new iteration); a kind's windows come from one name
  outermost AS (
    SELECT *
    FROM (
      SELECT d.*, min(d.depth) OVER (PARTITION BY d.kind, d.name, d.utid) AS min_depth
      FROM candidates AS d
    )
    WHERE
      depth = min_depth
  ),
  named AS (
    SELECT
      kind,
      priority,
      CASE WHEN kind IN (SELECT kind FROM _kineto_iteration_marker_rules WHERE per_name) THEN name ELSE kind END
        AS group_name,
      utid,
      count(*) AS n,
      sum(end_ts - ts) AS total
    FROM outermost
    GROUP BY 1, 2, 3, 4
  ),
  picked AS (
    SELECT kind, group_name, utid
    FROM named
    WHERE
      n >= 2
      AND NOT (SELECT yes FROM has_steps)
    ORDER BY priority, n DESC, total DESC, group_name, utid
    LIMIT 1
  ),
  picked_marks AS (
    SELECT DISTINCT o.kind, o.name, o.ts, o.end_ts, o.anchor
    FROM outermost AS o
    JOIN picked AS ch
      ON ch.kind = o.kind
      AND ch.utid IS o.utid
      AND ch.group_name = CASE
        WHEN o.kind IN (SELECT kind FROM _kineto_iteration_marker_rules WHERE per_name) THEN o.name
        ELSE o.kind
      END
  ),
  -- the device's active span (NULL without device activity)
  device_span AS (
    SELECT min(ts) AS ts, max(ts + dur) AS end_ts FROM kineto_kernels
  ),
  -- the end of the main process's last host event (the last window's end without device activity)
  host_end AS (
    SELECT max(ts + dur) AS end_ts FROM host WHERE upid = (SELECT upid FROM main_process)
  ),
  -- launches of the main process with the end of their device work, when the picked marker is a span
  span_launches AS (
    SELECT l.ts, l.gpu_end_ts
    FROM kineto_launches AS l
    WHERE
      l.upid = (SELECT upid FROM main_process)
      AND l.gpu_end_ts IS NOT NULL
      AND EXISTS (SELECT 1 FROM picked_marks WHERE anchor = 'span')
  ),
  -- the latest device end of the launches inside each span marker: one sorted pass (the outermost ranges
  -- of one name on one thread never overlap)
  span_swept AS (
    SELECT
      u.*,
      max(u.w_ts) OVER (ORDER BY u.ts, u.is_launch ROWS UNBOUNDED PRECEDING) AS in_ts,
      max(u.w_end) OVER (ORDER BY u.ts, u.is_launch ROWS UNBOUNDED PRECEDING) AS in_end
    FROM (
      SELECT ts, ts AS w_ts, end_ts AS w_end, 0 AS is_launch, NULL AS gpu_end_ts
      FROM picked_marks
      WHERE
        anchor = 'span'
      UNION ALL
      SELECT ts, NULL, NULL, 1, gpu_end_ts FROM span_launches
    ) AS u
  ),
  span_device_end AS (
    SELECT in_ts AS mark_ts, max(gpu_end_ts) AS device_end_ts
    FROM span_swept
    WHERE
      is_launch = 1
      AND ts < in_end
    GROUP BY in_ts
  ),
  anchored AS (
    SELECT
      kind,
      name,
      anchor,
      CASE WHEN anchor = 'start' THEN ts ELSE end_ts END AS at_ts,
      ts AS mark_ts,
      end_ts AS mark_end_ts
    FROM picked_marks
  ),
  picked_windows AS (
    -- start markers: from one start to the next, the last to the end of the device work, or without device
    -- work to the main process's last host event (its own marker's end, if later; never past the capture)
    SELECT
      a.kind AS source,
      a.name AS marker,
      a.at_ts AS ts,
      coalesce(
        lead(a.at_ts) OVER (ORDER BY a.at_ts),
        min(
          (SELECT end_ts FROM capture),
          max(coalesce((SELECT end_ts FROM device_span), (SELECT end_ts FROM host_end)), a.mark_end_ts)
        )
      ) AS end_ts
    FROM anchored AS a
    WHERE
      a.anchor = 'start'
    UNION ALL
    -- end markers: from the previous end (the capture start for the first: the host work before the first
    -- kernel of an iteration, its allocations and launches, is that iteration's) to this end
    SELECT
      a.kind,
      a.name,
      coalesce(lag(a.at_ts) OVER (ORDER BY a.at_ts), (SELECT ts FROM capture)),
      a.at_ts
    FROM anchored AS a
    WHERE
      a.anchor = 'end'
    UNION ALL
    -- span markers: the range itself, to the end of the device work launched inside it if later, never past
    -- the next range's start or the capture's end
    SELECT
      a.kind,
      a.name,
      a.mark_ts,
      min(
        coalesce(lead(a.mark_ts) OVER (ORDER BY a.mark_ts), (SELECT end_ts FROM capture)),
        max(a.mark_end_ts, coalesce(d.device_end_ts, a.mark_end_ts))
      )
    FROM anchored AS a
    LEFT JOIN span_device_end AS d
      ON d.mark_ts = a.mark_ts
    WHERE
      a.anchor = 'span'
  ),
  -- launches of the main process, for the device-work test of the picked windows
  main_launches AS (
    SELECT r.ts
    FROM kineto_runtime_calls AS r
    WHERE
      r.class = 'launch'
      AND r.upid = (SELECT upid FROM main_process)
      AND EXISTS (SELECT 1 FROM picked)
  ),
  -- the picked windows holding at least one launch start: one sorted pass (the windows never overlap)
  launch_swept AS (
    SELECT
      u.*,
      max(u.w_ts) OVER (ORDER BY u.ts, u.is_launch ROWS UNBOUNDED PRECEDING) AS in_ts,
      max(u.w_end) OVER (ORDER BY u.ts, u.is_launch ROWS UNBOUNDED PRECEDING) AS in_end
    FROM (
      SELECT ts, ts AS w_ts, end_ts AS w_end, 0 AS is_launch FROM picked_windows
      UNION ALL
      SELECT ts, NULL, NULL, 1 FROM main_launches
    ) AS u
  ),
  -- whether the picked marker can stand for iterations (see the header): its span covers half of the
  -- capture, and half of its windows hold a launch when the process launches anything
  accepted AS (
    SELECT
      2 * (max(m.end_ts) - min(m.ts)) >= (SELECT end_ts - ts FROM capture)
      AND (
        NOT EXISTS (SELECT 1 FROM main_launches)
        OR 2 * (
          SELECT count(DISTINCT in_ts)
          FROM launch_swept
          WHERE
            is_launch = 1
            AND ts < in_end
        ) >= (SELECT count(*) FROM picked_windows)
      ) AS yes
    FROM picked_marks AS m
  ),
  chosen AS (
    SELECT * FROM picked WHERE (SELECT yes FROM accepted)
  ),
  inferred AS (
    SELECT * FROM picked_windows WHERE EXISTS (SELECT 1 FROM chosen)
  ),
  windows AS (
    SELECT
      st.upid,
      st.ts,
      st.dur,
      st.step,
      'profiler_step' AS source,
      'ProfilerStep#' || st.step AS marker
    FROM kineto_steps AS st
    WHERE
      NOT coalesce((SELECT yes FROM steps_lagged), FALSE)
    UNION ALL
    SELECT
      (SELECT upid FROM main_process),
      i.ts,
      i.end_ts - i.ts,
      row_number() OVER (ORDER BY i.ts),
      i.source,
      i.marker
    FROM inferred AS i
    WHERE
      i.end_ts > i.ts
    UNION ALL
    -- no FROM: the capture's scan of every slice runs only when this branch is taken; with device
    -- activity, its active span
    SELECT
      (SELECT upid FROM main_process),
      max((SELECT ts FROM capture), coalesce((SELECT ts FROM device_span), (SELECT ts FROM capture))),
      min((SELECT end_ts FROM capture), coalesce((SELECT end_ts FROM device_span), (SELECT end_ts FROM capture)))
        - max((SELECT ts FROM capture), coalesce((SELECT ts FROM device_span), (SELECT ts FROM capture))),
      1,
      'capture',
      NULL
    WHERE
      (NOT (SELECT yes FROM has_steps) OR coalesce((SELECT yes FROM steps_lagged), FALSE))
      AND NOT EXISTS (SELECT 1 FROM chosen)
      AND (SELECT end_ts > ts FROM capture)
  )
SELECT row_number() OVER (ORDER BY upid, ts) AS id, w.upid, w.ts, w.dur, w.step, w.source, w.marker
FROM windows AS w
ORDER BY id;

-- GC time per window, by one sorted pass over windows and GC slices of the same process.
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_gc(
  -- Window id.
  id LONG,
  -- Python GC time inside the window.
  gc_dur DURATION
) AS
WITH
  gc_events AS (
    SELECT s.upid, s.ts, s.dur
    FROM kineto_thread_track_slices AS s
    WHERE
      s.name = 'Python GC'
      AND s.dur > 0
  ),
  gc_swept AS (
    SELECT
      u.*,
      max(u.w_id) OVER (PARTITION BY u.upid ORDER BY u.ts, u.is_gc ROWS UNBOUNDED PRECEDING) AS in_id,
      max(u.w_end) OVER (PARTITION BY u.upid ORDER BY u.ts, u.is_gc ROWS UNBOUNDED PRECEDING) AS in_end
    FROM (
      SELECT upid, ts, dur, id AS w_id, ts + dur AS w_end, 0 AS is_gc FROM _kineto_iteration_windows
      UNION ALL
      SELECT upid, ts, dur, NULL, NULL, 1 FROM gc_events
    ) AS u
  )
SELECT in_id AS id, sum(dur) AS gc_dur
FROM gc_swept
WHERE
  is_gc = 1
  AND in_id IS NOT NULL
  AND ts < in_end
GROUP BY in_id
ORDER BY id;

-- Each window's width less its GC time, its position in its process and its process's window count.
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_ranked(
  -- Window id.
  id LONG,
  -- Process.
  upid JOINID(process.id),
  -- Window start.
  ts TIMESTAMP,
  -- Window width.
  dur DURATION,
  -- Window width less its GC time.
  width DURATION,
  -- Position in its process (1: the first window).
  rn LONG,
  -- Windows of its process.
  cnt LONG
) AS
SELECT
  n.id,
  n.upid,
  n.ts,
  n.dur,
  n.dur - coalesce(g.gc_dur, 0) AS width,
  row_number() OVER (PARTITION BY n.upid ORDER BY n.ts) AS rn,
  count(*) OVER (PARTITION BY n.upid) AS cnt
FROM _kineto_iteration_windows AS n
LEFT JOIN _kineto_iteration_gc AS g
  USING (id)
ORDER BY n.id;

-- Median width of the windows after the first, per process (mean of the two middles when even).
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_rest_median(
  -- Process.
  upid JOINID(process.id),
  -- Median width (GC time excluded) of its windows after the first.
  median_width DOUBLE
) AS
WITH
  rest AS (
    SELECT
      upid,
      width,
      row_number() OVER (PARTITION BY upid ORDER BY width) AS k,
      count(*) OVER (PARTITION BY upid) AS m
    FROM _kineto_iteration_ranked
    WHERE
      rn > 1
  )
SELECT upid, avg(width) AS median_width
FROM rest
WHERE
  k IN ((m + 1) / 2, (m + 2) / 2)
GROUP BY upid;

-- The first window of each process with at least two.
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_first_windows(
  -- Window id.
  id LONG,
  -- Process.
  upid JOINID(process.id),
  -- Window start.
  ts TIMESTAMP,
  -- Window end.
  end_ts TIMESTAMP
) AS
SELECT id, upid, ts, ts + dur AS end_ts
FROM _kineto_iteration_ranked
WHERE
  rn = 1
  AND cnt >= 2
ORDER BY id;

-- What follows each first window, read once per window (not once per call inside it: the calls of a
-- first window times the calls after it is quadratic in the capture's length).
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_after_first(
  -- Window id.
  id LONG,
  -- The longest launch call of its process after the window.
  later_launch_dur DURATION,
  -- Whether its process makes an event sync after the window.
  later_event_sync BOOL
) AS
SELECT
  f.id,
  (
    SELECT max(l.dur)
    FROM kineto_runtime_calls AS l
    WHERE
      l.upid = f.upid
      AND l.class = 'launch'
      AND l.ts >= f.end_ts
  ) AS later_launch_dur,
  EXISTS (
    SELECT 1
    FROM kineto_runtime_calls AS e
    WHERE
      e.upid = f.upid
      AND e.class = 'event_sync'
      AND e.ts >= f.end_ts
  ) AS later_event_sync
FROM _kineto_iteration_first_windows AS f
ORDER BY f.id;

-- One-time work in the first window of each process that launches device work: device / pinned
-- allocations and frees, module loads, and launch calls longer than any launch after the window (and
-- than 100 us: a launch enqueues in 2-20 us; the first launch of each kernel loads its module lazily).
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_one_time(
  -- Window id.
  id LONG,
  -- One-time work in the window.
  one_time_dur DURATION,
  -- Whether its process launches device work.
  launches BOOL
) AS
SELECT
  f.id,
  (
    SELECT coalesce(sum(c.dur), 0)
    FROM kineto_runtime_calls AS c
    WHERE
      c.upid = f.upid
      AND c.ts >= f.ts
      AND c.ts < f.end_ts
      AND (
        c.class IN ('malloc', 'free', 'module_load')
        -- autotuning (cudnn benchmark, inductor max-autotune) times candidate kernels with events and
        -- waits on them: event syncs that no later window has
        OR (c.class = 'event_sync' AND NOT a.later_event_sync)
        OR (c.class = 'launch' AND c.dur > max(100000, coalesce(a.later_launch_dur, 0)))
      )
  ) AS one_time_dur,
  EXISTS (SELECT 1 FROM kineto_runtime_calls AS c WHERE c.upid = f.upid AND c.class = 'launch') AS launches
FROM _kineto_iteration_first_windows AS f
JOIN _kineto_iteration_after_first AS a
  USING (id)
ORDER BY f.id;

-- The first windows of processes without launches (one-time work is then host ops, below): where every
-- first window's process launches device work it is empty and the host ops are never read.
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_cpu_first(
  -- Window id.
  id LONG,
  -- Process.
  upid JOINID(process.id),
  -- Window start.
  ts TIMESTAMP,
  -- Window end.
  end_ts TIMESTAMP
) AS
SELECT f.id, f.upid, f.ts, f.end_ts
FROM _kineto_iteration_first_windows AS f
WHERE
  NOT EXISTS (SELECT 1 FROM kineto_runtime_calls AS c WHERE c.upid = f.upid AND c.class = 'launch')
ORDER BY f.id;

-- The names of the ops (not annotations) each such process runs after its first window.
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_later_names(
  -- Process.
  upid JOINID(process.id),
  -- Op name.
  name STRING
) AS
SELECT DISTINCT h.upid, h.name
FROM _kineto_iteration_cpu_first AS f
CROSS JOIN kineto_host_slices AS h
  ON h.upid = f.upid AND h.ts >= f.end_ts
JOIN kineto_event_categories AS c
  USING (category)
WHERE
  h.dur >= 0
  AND c.event_class = 'cpu_op'
  AND NOT c.is_annotation;

-- Without launches: the ops (not annotations) of each first window whose name no later window runs,
-- counted at the outermost such op (its parent is not one of them).
CREATE OR REPLACE PERFETTO TABLE _kineto_iteration_host_one_time(
  -- Window id.
  id LONG,
  -- Time of those ops.
  dur DURATION
) AS
WITH
  first_only AS MATERIALIZED (
    SELECT f.id, h.id AS op_id, h.dur, h.parent_id
    FROM _kineto_iteration_cpu_first AS f
    CROSS JOIN kineto_host_slices AS h
      ON h.upid = f.upid AND h.ts >= f.ts AND h.ts < f.end_ts
    JOIN kineto_event_categories AS c
      USING (category)
    WHERE
      h.dur >= 0
      AND c.event_class = 'cpu_op'
      AND NOT c.is_annotation
      AND NOT EXISTS (SELECT 1 FROM _kineto_iteration_later_names AS l WHERE l.upid = h.upid AND l.name = h.name)
  )
SELECT id, sum(dur) AS dur
FROM first_only AS o
WHERE
  o.parent_id IS NULL
  OR o.parent_id NOT IN (SELECT op_id FROM first_only)
GROUP BY id
ORDER BY id;

-- Iteration windows, the unit every step-time reading is made of. In order of preference, per process:
--
-- 1. `profiler_step`: the CPU ProfilerStep#N windows (kineto.lib.steps) of every process that has them,
--    unless the device lags them: when the trace's first device activity starts after the last step
--    window ends, no step window holds any of the device's work (every kernel runs on after the loop that
--    launched it: a host / device clock offset, or a device still draining an earlier queue), and the
--    steps cannot measure the device; the capture's device span is the window (3.), as without steps.
-- 2. Inferred from a marker that repeats at least twice on one thread of the process that does most of the
--    host work (inference servers, et_replay, harnesses without a schedule). Markers, first that repeats
--    wins (a name repeated on several threads is one candidate per thread: the thread with the most):
--    `dataloader` (a DataLoader __next__ starts each training iteration), `optimizer_step`
--    (Optimizer.step#... ends one: the window runs from the end of the previous one, the first from the
--    capture start), `module_forward` (the outermost `nn.Module: ...` frame, with_modules/with_stack),
--    `record_function` (TorchRec-style `## name ##` annotations), `execute_model` (vLLM / sglang model
--    runners), `annotation` (the user annotation that repeats most often at its outermost depth).
--    Start markers (a DataLoader wait, a forward frame: one phase of a loop that runs on) make windows from
--    one start to the next; the last runs to the end of the capture. Span markers (record_function and
--    user annotations: a range the user put around one unit of work, a request, a train step) make windows
--    of their own range, extended to the end of the device work launched inside it (the request's kernels
--    are the request's; never past the next range's start): the time between two ranges, a server waiting
--    for its next request with nothing recorded, is outside every window (serving idle, not step time).
--    The markers are the rule table _kineto_iteration_marker_rules.
--    The chosen marker is accepted only when its windows can stand for iterations, else the capture is
--    the window: its occurrences span at least half of the capture (first start to last end; a marker
--    seen only in a corner of the capture is a phase, not the loop), and, when the process launches device
--    work, at least half of its windows hold a launch (an annotation of a CPU-side loop, a request queue,
--    is no training or decode iteration: its sub-millisecond windows hold no device work).
--    Time after the device's active span is kept out where no marker bounds it: the last start-marker
--    window ends at the last device activity (or its own marker's end, if later) instead of the capture
--    end: a server's idle tail after its last request is no host compute of an iteration. Without device
--    activity it ends at the main process's last host event (op, annotation, Python frame): the capture
--    runs on to the profiler's own "Record Window End" after the loop has stopped (the profiler's stop and
--    export), which is no iteration's host time. (The first
--    end-marker window keeps the capture start: the host work before an iteration's first kernel, its
--    allocations and launches, is that iteration's.)
-- 3. `capture`: the whole capture as one window (first to last event of any kind, device work included),
--    for the process with the most host events; with device activity, the device's active span (first
--    device activity start to last end): the host's lead-in before any device work and its tail after
--    the last one are outside every iteration (with a host / device clock offset the lead-in is the
--    offset, not host work; catalog.capture_validity names it).
--
-- The first of at least two windows of a process is cold (`is_cold`) when it is wider than 1.5x the median
-- of the others and, in a process that launches device work, one-time work makes up at least half of that
-- excess: device / pinned allocations and frees (cudaMalloc / cudaFree, allocator warm-up), module loads,
-- event synchronizes when no later window has any (autotuning times its candidate kernels with events),
-- and launch calls longer than every later launch and than 100 us (lazy module and kernel loading in the
-- first launch of a kernel). Position alone is no cold start: a first step slowed by a sync, a copy or a
-- slow batch is a step like the others. GC time inside the window is not counted as width: a GC pause in
-- the first step is a GC pause, not a cold start. A process without launches shows no one-time work as
-- runtime calls; there one-time work shows as host ops of the first window whose name no later window
-- runs (lazy init: the optimizer's state, aten::zeros_like per parameter; a first-use import or load),
-- and the window is cold only when such ops make up at least a tenth of its excess. On a CPU the rest of
-- a cold start (first-touch page faults of new allocations) inflates the ops every step runs and cannot
-- be separated from them, so the one-time ops are its evidence, not its size; a first window that is
-- merely wider, every op of it also run by the steady windows, is a slow step like any other (an outlier
-- seen in one window), whatever its position or ProfilerStep number. Not seen as one-time work:
-- compilation that runs as ordinary host ops the later windows also run.
CREATE OR REPLACE PERFETTO TABLE kineto_iterations(
  -- Window id, unique in the trace, in time order per process.
  id LONG,
  -- Process whose iteration this is.
  upid JOINID(process.id),
  -- Window start.
  ts TIMESTAMP,
  -- Window width.
  dur DURATION,
  -- Iteration number: N of ProfilerStep#N, else 1, 2, ... in time order.
  step LONG,
  -- profiler_step, dataloader, optimizer_step, module_forward, record_function, execute_model, annotation
  -- or capture.
  source STRING,
  -- The marker the windows were cut at (ProfilerStep#N, the marker name, or NULL for the capture).
  marker STRING,
  -- First iteration that is wider than 1.5x the median of the others (GC time excluded), the excess mostly
  -- one-time work where the process launches device work, at least a tenth of it in host ops no later
  -- window runs where it does not: cold start.
  is_cold BOOL
) AS
SELECT
  r.id,
  w.upid,
  r.ts,
  r.dur,
  w.step,
  w.source,
  w.marker,
  (
    r.rn = 1
    AND r.cnt >= 2
    AND r.width > 1.5 * m.median_width
    AND IIF(
      o.launches,
      2 * o.one_time_dur >= r.width - m.median_width,
      10 * coalesce(ho.dur, 0) >= r.width - m.median_width
    )
  ) AS is_cold
FROM _kineto_iteration_ranked AS r
JOIN _kineto_iteration_windows AS w
  USING (id)
LEFT JOIN _kineto_iteration_rest_median AS m
  ON m.upid = r.upid
LEFT JOIN _kineto_iteration_one_time AS o
  USING (id)
LEFT JOIN _kineto_iteration_host_one_time AS ho
  USING (id)
ORDER BY r.id;
