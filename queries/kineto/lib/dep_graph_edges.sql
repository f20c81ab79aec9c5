-- version: 7

INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.dep_graph_nodes;

-- The device's timing slack (ns): how soon after its stream's previous activity ended an activity must start
-- to be taken as queued behind it (its stream edge keeps the measured delay), after another stream's
-- activity ended to be taken as waiting for it (an event edge), and after a device activity ended a long
-- launch must return to be taken as blocked on the full launch queue (a queue edge).
CREATE OR REPLACE PERFETTO FUNCTION _kineto_dep_graph_slack_ns()
RETURNS LONG AS
SELECT 20000;

-- The edges the trace records (every kind but the inferred queue and event edges below).
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_recorded_edges(
  -- Window.
  window_id LONG,
  -- Source node id.
  src LONG,
  -- Destination node id.
  dst LONG,
  -- thread (host order), launch (call -> its device activity), stream (device order), wait (a
  -- blocking call waits for device work), fork (the autograd engine's thread starts the backward once the
  -- calling thread reached backward()) or join (the calling thread's backward() returns once the engine's
  -- thread finished).
  kind STRING,
  -- `start` when the edge holds back the destination's start, `end` when it holds back its end.
  constrains STRING,
  -- Measured destination start (or end) minus source end.
  gap DURATION
) AS
WITH
  lane_nodes AS (
    SELECT n.id, n.window_id, n.utid, n.ts, n.dur, n.kind, n.tag
    FROM kineto_dep_graph_nodes AS n
    WHERE
      n.kind != 'device'
  ),
  thread_order AS (
    SELECT
      window_id,
      lag(id) OVER lane AS src,
      id AS dst,
      ts,
      ts - lag(ts + dur) OVER lane AS gap
    FROM lane_nodes
    WINDOW lane AS (PARTITION BY window_id, utid ORDER BY ts, dur)
  ),
  thread_prev AS (
    SELECT dst AS id, src, ts - gap AS src_end
    FROM thread_order
    WHERE
      src IS NOT NULL
  ),
  devices AS (
    SELECT n.id, n.window_id, n.device, n.stream, n.ts, n.dur, k.correlation
    FROM kineto_dep_graph_nodes AS n
    JOIN kineto_kernels AS k
      USING (id)
    WHERE
      n.kind = 'device'
  ),
  -- a blocking copy waits for its own copy, so the copy's launch edge leaves the node before the call
  launch AS (
    SELECT
      d.window_id,
      CASE WHEN c.blocks_host THEN tp.src ELSE c.id END AS src,
      d.id AS dst,
      d.ts - CASE WHEN c.blocks_host THEN tp.src_end ELSE c.ts + c.dur END AS gap
    FROM devices AS d
    JOIN _kineto_dep_graph_calls AS c
      USING (correlation)
    LEFT JOIN thread_prev AS tp
      ON tp.id = c.id
  ),
  stream_order AS (
    SELECT
      window_id,
      lag(id) OVER s AS src,
      id AS dst,
      ts - lag(ts + dur) OVER s AS measured
    FROM devices
    WINDOW s AS (PARTITION BY window_id, device, stream ORDER BY ts, id)
  ),
  -- materialized, so that the join below looks each device node's correlation up in the few copies
  -- (the planner scanned every device node once per copy otherwise: quadratic in the capture's length)
  copies AS MATERIALIZED (
    SELECT c.id, c.window_id, c.ts, c.dur, c.correlation
    FROM _kineto_dep_graph_calls AS c
    WHERE
      c.class = 'blocking_copy'
  ),
  own_copy AS (
    SELECT c.window_id, d.id AS src, c.id AS dst, c.ts + c.dur - (d.ts + d.dur) AS gap
    FROM devices AS d
    JOIN copies AS c
      USING (correlation)
  ),
  -- for each sync and stream of its process: the last activity launched before the sync. Activities are
  -- numbered per stream in launch order; a running max over the merged sequence finds the number.
  syncs AS (
    SELECT c.id, c.window_id, c.ts, c.dur, c.upid
    FROM _kineto_dep_graph_calls AS c
    WHERE
      c.blocks_host
      AND c.class != 'blocking_copy'
  ),
  launched AS (
    SELECT
      d.id,
      d.window_id,
      d.device,
      d.stream,
      d.ts + d.dur AS end_ts,
      c.ts AS launch_ts,
      c.upid,
      row_number() OVER (PARTITION BY c.upid, d.device, d.stream ORDER BY c.ts, d.ts, d.id) AS seq
    FROM devices AS d
    JOIN _kineto_dep_graph_calls AS c
      USING (correlation)
    -- nothing to number on a capture without a sync
    WHERE
      EXISTS (SELECT 1 FROM syncs)
  ),
  streams AS (
    SELECT DISTINCT upid, device, stream FROM launched
  ),
  merged AS (
    SELECT l.upid, l.device, l.stream, l.launch_ts AS ts, 0 AS is_sync, l.seq, NULL AS sync_id
    FROM launched AS l
    UNION ALL
    SELECT st.upid, st.device, st.stream, sy.ts, 1, NULL, sy.id
    FROM syncs AS sy
    JOIN streams AS st
      USING (upid)
  ),
  last_before AS (
    SELECT upid, device, stream, sync_id, last_seq
    FROM (
      SELECT
        m.*,
        max(m.seq) OVER (PARTITION BY m.upid, m.device, m.stream ORDER BY m.ts, m.is_sync ROWS UNBOUNDED PRECEDING)
          AS last_seq
      FROM merged AS m
    )
    WHERE
      is_sync = 1
      AND last_seq IS NOT NULL
  ),
  waited AS (
    SELECT sy.window_id, l.id AS src, sy.id AS dst, sy.ts + sy.dur AS sync_end, l.end_ts
    FROM last_before AS lb
    JOIN launched AS l
      ON l.upid = lb.upid
      AND l.device = lb.device
      AND l.stream = lb.stream
      AND l.seq = lb.last_seq
    JOIN syncs AS sy
      ON sy.id = lb.sync_id
    WHERE
      l.window_id = sy.window_id
      -- a sync that returned before the activity ended did not wait for it (a stream sync of another
      -- stream: the trace does not say which stream a sync waits on)
      AND l.end_ts <= sy.ts + sy.dur
  ),
  -- every waited activity gets the same tail (sync end - the latest waited end), so an activity that
  -- ends earlier after an edit never holds the sync at its measured end
  wait AS (
    SELECT window_id, src, dst, sync_end - max(end_ts) OVER (PARTITION BY dst) AS gap
    FROM waited
  ),
  -- The autograd engine runs a CUDA backward on its own thread per device while the thread that called
  -- backward() blocks until the graph task is done (PyTorch docs, "Autograd mechanics", thread safety /
  -- "Multithreading": the calling thread waits for the engine's device threads). Kineto records neither
  -- the hand-off nor the wait: the caller shows one long span with no call of its own, the engine thread
  -- an idle stretch from the window start to its first call. Where the window's main lane has one node
  -- spanning the whole of an engine lane's run (it recorded nothing while the engine worked), two edges
  -- say so: fork, from the main lane's node before that span to the engine lane's first node (its idle
  -- stretch ends that long after the caller got there), and join, from the engine lane's last node to
  -- the span (the caller resumes that long after the engine finished). Both `end` edges with the measured
  -- gap, like a sync's wait: once the backward ends earlier after an edit, the caller resumes earlier.
  engine_lanes AS (
    SELECT DISTINCT th.lane AS utid
    FROM kineto_host_slices AS h
    JOIN _kineto_dep_graph_threads AS th
      USING (utid)
    WHERE
      h.name GLOB 'autograd::engine::evaluate_function: *'
  ),
  engine_nodes AS MATERIALIZED (
    SELECT
      n.id,
      n.window_id,
      n.utid,
      n.kind,
      n.ts,
      n.ts + n.dur AS end_ts,
      row_number() OVER (PARTITION BY n.window_id, n.utid ORDER BY n.ts, n.dur) AS first_rn,
      row_number() OVER (PARTITION BY n.window_id, n.utid ORDER BY n.ts + n.dur DESC, n.ts DESC) AS last_rn
    FROM lane_nodes AS n
    JOIN _kineto_dep_graph_lanes AS l
      ON l.window_id = n.window_id
      AND l.utid = n.utid
      AND NOT l.is_main
    WHERE
      n.utid IN (SELECT utid FROM engine_lanes)
  ),
  engine_first_calls AS (
    SELECT window_id, utid, min(ts) AS first_call_ts
    FROM engine_nodes
    WHERE
      kind = 'call'
    GROUP BY window_id, utid
  ),
  engine_runs AS (
    SELECT
      f.window_id,
      f.utid,
      f.id AS first_id,
      f.end_ts AS first_end,
      la.id AS last_id,
      la.end_ts AS last_end,
      fc.first_call_ts
    FROM engine_nodes AS f
    JOIN engine_nodes AS la
      ON la.window_id = f.window_id
      AND la.utid = f.utid
      AND la.last_rn = 1
    JOIN engine_first_calls AS fc
      ON fc.window_id = f.window_id
      AND fc.utid = f.utid
    WHERE
      f.first_rn = 1
      AND f.kind = 'host'
  ),
  -- the main lane's nodes numbered in order; for each engine run the last main node that started at or
  -- before its first call (a running max over the merged sequence, as for the syncs above)
  main_nodes AS (
    SELECT
      n.id,
      n.window_id,
      n.kind,
      n.ts,
      n.ts + n.dur AS end_ts,
      row_number() OVER (PARTITION BY n.window_id ORDER BY n.ts, n.dur) AS seq
    FROM lane_nodes AS n
    JOIN _kineto_dep_graph_lanes AS l
      ON l.window_id = n.window_id
      AND l.utid = n.utid
      AND l.is_main
    -- only a window with an engine run is looked at (its main lane is numbered whole)
    WHERE
      n.window_id IN (SELECT window_id FROM engine_runs)
  ),
  main_probe AS (
    SELECT window_id, ts, 0 AS is_probe, seq, NULL AS utid
    FROM main_nodes
    UNION ALL
    SELECT window_id, first_call_ts, 1, NULL, utid
    FROM engine_runs
  ),
  caller_seq AS (
    SELECT window_id, utid, at_seq
    FROM (
      SELECT
        p.*,
        max(p.seq) OVER (PARTITION BY p.window_id ORDER BY p.ts, p.is_probe ROWS UNBOUNDED PRECEDING) AS at_seq
      FROM main_probe AS p
    )
    WHERE
      is_probe = 1
  ),
  engine_calls AS (
    SELECT
      r.window_id,
      r.first_id,
      r.first_end,
      r.last_id,
      r.last_end,
      caller.id AS caller_id,
      caller.end_ts AS caller_end,
      prior.id AS before_id,
      prior.end_ts AS before_end
    FROM engine_runs AS r
    JOIN caller_seq AS cs
      ON cs.window_id = r.window_id
      AND cs.utid = r.utid
    JOIN main_nodes AS caller
      ON caller.window_id = cs.window_id
      AND caller.seq = cs.at_seq
    JOIN main_nodes AS prior
      ON prior.window_id = cs.window_id
      AND prior.seq = cs.at_seq - 1
    WHERE
      caller.kind = 'host'
      AND caller.end_ts >= r.last_end
      AND prior.end_ts <= r.first_end
  ),
  fork AS (
    SELECT window_id, before_id AS src, first_id AS dst, first_end - before_end AS gap
    FROM engine_calls
  ),
  join_back AS (
    SELECT window_id, last_id AS src, caller_id AS dst, caller_end - last_end AS gap
    FROM engine_calls
  )
SELECT window_id, src, dst, 'thread' AS kind, 'start' AS constrains, gap
FROM thread_order
WHERE
  src IS NOT NULL
UNION ALL
SELECT window_id, src, dst, 'launch', 'start', gap
FROM launch
WHERE
  src IS NOT NULL
UNION ALL
-- an activity that started within the slack after its stream's previous one ended was queued behind it
-- (the device's own delay between back-to-back activities): its stream edge keeps that delay, so the
-- stream, not the launch, explains its start; otherwise the edge only says it cannot start before its
-- predecessor ends
SELECT
  window_id,
  src,
  dst,
  'stream',
  'start',
  CASE WHEN measured > 0 AND measured <= _kineto_dep_graph_slack_ns() THEN measured ELSE min(0, measured) END
FROM stream_order
WHERE
  src IS NOT NULL
UNION ALL
SELECT window_id, src, dst, 'wait', 'end', gap
FROM own_copy
UNION ALL
SELECT window_id, src, dst, 'wait', 'end', gap
FROM wait
UNION ALL
SELECT window_id, src, dst, 'fork', 'end', gap
FROM fork
UNION ALL
SELECT window_id, src, dst, 'join', 'end', gap
FROM join_back;

-- Every device activity with the end of its launch (the latest source end of its launch edges, NULL
-- without one) and the end of its stream's previous activity, numbered in (device, end) order: the
-- inferred edges below look each waiter's candidates up by number.
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_device_ends(
  -- Rank in (device, end, window, start, id) order.
  rank LONG,
  -- Node id.
  id LONG,
  -- Window.
  window_id LONG,
  -- Device (-1 when unknown).
  device LONG,
  -- Stream.
  stream LONG,
  -- Start.
  ts TIMESTAMP,
  -- End.
  end_ts TIMESTAMP,
  -- End of its launch call, or NULL.
  launched_at TIMESTAMP,
  -- End of its stream's previous activity, or NULL.
  prev_end TIMESTAMP
) AS
WITH
  launched AS (
    SELECT e.dst AS id, max(s.ts + s.dur) AS launched_at
    FROM _kineto_dep_graph_recorded_edges AS e
    JOIN kineto_dep_graph_nodes AS s
      ON s.id = e.src
    WHERE
      e.kind = 'launch'
    GROUP BY e.dst
  ),
  previous AS (
    SELECT e.dst AS id, max(s.ts + s.dur) AS prev_end
    FROM _kineto_dep_graph_recorded_edges AS e
    JOIN kineto_dep_graph_nodes AS s
      ON s.id = e.src
    WHERE
      e.kind = 'stream'
    GROUP BY e.dst
  )
SELECT
  row_number() OVER (ORDER BY coalesce(n.device, -1), n.ts + max(n.dur, 0), n.window_id, n.ts, n.id) AS rank,
  n.id,
  n.window_id,
  coalesce(n.device, -1) AS device,
  n.stream,
  n.ts,
  n.ts + max(n.dur, 0) AS end_ts,
  l.launched_at,
  p.prev_end
FROM kineto_dep_graph_nodes AS n
LEFT JOIN launched AS l
  USING (id)
LEFT JOIN previous AS p
  USING (id)
WHERE
  n.kind = 'device'
ORDER BY rank;

-- By rank.
CREATE OR REPLACE PERFETTO INDEX _kineto_dep_graph_device_ends_rank ON _kineto_dep_graph_device_ends(rank);

-- The edges the trace does not record, inferred from the timing of device activities against each other
-- and against the launches; each one is the latest qualifying activity among the four last to end on the
-- waiter's device before its reference time (a handful: the waited one ends within the slack of it).
-- queue: launch-queue back-pressure. A launch call returns only once the device's launch queue has a free
--   slot (PyTorch docs, "CUDA semantics", asynchronous execution: the host runs ahead only as far as the
--   queue lets it). A launch that lasted more than the slack beyond the median launch and returned within
--   the slack after an activity on its device ended (one launched before the call started, that ended
--   while it was blocked) waited for it: an `end` edge with the measured gap, so that when the device work
--   ahead gets shorter the host is released earlier instead of keeping the blocked time as host work.
-- event: cross-stream waits (cudaStreamWaitEvent, which Kineto records without the event it waits on). A
--   device activity that started more than the slack after both its launch returned and its stream's
--   previous activity ended was held back by other work on its device: when an activity on another stream
--   of its device ended within the slack of its start (either side: two streams are timed with a few us of
--   jitter), after its launch, and was launched no later than it (an event can only be waited for once the
--   work before it is queued; this also keeps a host / device clock skew from closing a cycle), it waited
--   for that activity (compute waiting for its all-reduce, a copy stream waiting for the compute that
--   produced its tensor). A `start` edge with the measured gap; the launch then no longer explains its start.
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_inferred_edges(
  -- Window (the destination's).
  window_id LONG,
  -- Source node id: the device activity waited for.
  src LONG,
  -- Destination node id: the blocked launch call (queue) or the held activity (event).
  dst LONG,
  -- queue or event.
  kind STRING,
  -- `end` (queue) or `start` (event).
  constrains STRING,
  -- Measured destination end (queue) or start (event) minus source end.
  gap DURATION
) AS
WITH
  launch_calls AS (
    SELECT n.id, n.window_id, n.ts, max(n.dur, 0) AS dur, n.ts + max(n.dur, 0) AS end_ts
    FROM kineto_dep_graph_nodes AS n
    WHERE
      n.kind = 'call'
      AND n.tag = 'launch'
  ),
  -- the median launch (the mean of the two middle ones at an even count, truncated)
  typical AS (
    SELECT cast(avg(dur) AS INT) AS dur
    FROM (
      SELECT dur, row_number() OVER (ORDER BY dur) AS rn, count() OVER () AS cnt
      FROM launch_calls
    )
    WHERE
      rn IN ((cnt + 1) / 2, (cnt + 2) / 2)
  ),
  long_calls AS MATERIALIZED (
    SELECT c.id, c.window_id, c.ts, c.end_ts
    FROM launch_calls AS c
    WHERE
      c.dur - (SELECT dur FROM typical) > _kineto_dep_graph_slack_ns()
  ),
  -- the device of each long call's launched activity, looked up for the long calls only (a join of every
  -- launch edge with the device activities grew faster than the capture)
  call_device AS (
    SELECT e.src AS id, max(coalesce(d.device, -1)) AS device
    FROM _kineto_dep_graph_recorded_edges AS e
    JOIN kineto_dep_graph_nodes AS d
      ON d.id = e.dst
    WHERE
      e.kind = 'launch'
      AND e.src IN (SELECT id FROM long_calls)
    GROUP BY e.src
  ),
  blocked AS (
    SELECT c.id, c.window_id, c.ts, c.end_ts, cd.device
    FROM long_calls AS c
    JOIN call_device AS cd
      USING (id)
    WHERE
      cd.device >= 0
  ),
  held AS (
    SELECT d.id, d.window_id, d.device, d.stream, d.ts, d.launched_at
    FROM _kineto_dep_graph_device_ends AS d
    WHERE
      (d.prev_end IS NULL OR d.ts - d.prev_end > _kineto_dep_graph_slack_ns())
      AND d.launched_at IS NOT NULL
      AND d.ts - d.launched_at > _kineto_dep_graph_slack_ns()
  ),
  -- for each waiter the rank of the last activity on its device that ended by its reference time (a
  -- running max over the merged sequence, ends before waiters at a tie)
  probes AS (
    SELECT device, end_ts AS t, 0 AS is_probe, rank, NULL AS id, NULL AS kind
    FROM _kineto_dep_graph_device_ends
    UNION ALL
    SELECT device, end_ts, 1, NULL, id, 'queue'
    FROM blocked
    UNION ALL
    SELECT device, ts + _kineto_dep_graph_slack_ns(), 1, NULL, id, 'event'
    FROM held
  ),
  last_ended AS (
    SELECT id, kind, device, at_rank
    FROM (
      SELECT
        p.*,
        max(p.rank) OVER (PARTITION BY p.device ORDER BY p.t, p.is_probe ROWS UNBOUNDED PRECEDING) AS at_rank
      FROM probes AS p
    )
    WHERE
      is_probe = 1
      AND at_rank IS NOT NULL
  ),
  looked_at(back) AS (
    SELECT 0
    UNION ALL
    SELECT 1
    UNION ALL
    SELECT 2
    UNION ALL
    SELECT 3
  ),
  -- materialized: read by both kinds below, each joined to its waiters (inlined, the planner evaluated it
  -- again for every waiter: 24 s on hta_df_index_resolver's 975 held activities)
  candidates AS MATERIALIZED (
    SELECT le.id AS dst, le.kind, c.id AS src, c.rank, c.ts AS src_ts, c.end_ts AS src_end, c.stream AS src_stream,
      c.launched_at AS src_launched, c.device AS src_device, le.device
    FROM last_ended AS le
    CROSS JOIN looked_at AS o
    JOIN _kineto_dep_graph_device_ends AS c
      ON c.rank = le.at_rank - o.back
  ),
  queue AS (
    SELECT b.window_id, c.src, c.dst, c.rank, b.end_ts - c.src_end AS gap
    FROM candidates AS c
    JOIN blocked AS b
      ON b.id = c.dst
    WHERE
      c.kind = 'queue'
      AND c.src_device = c.device
      AND b.end_ts - c.src_end <= _kineto_dep_graph_slack_ns()
      AND c.src_end > b.ts
      AND c.src_launched <= b.ts
  ),
  event AS (
    SELECT h.window_id, c.src, c.dst, c.rank, h.ts - c.src_end AS gap
    FROM candidates AS c
    JOIN held AS h
      ON h.id = c.dst
    WHERE
      c.kind = 'event'
      AND c.src_device = c.device
      AND c.src_stream IS NOT h.stream
      AND abs(h.ts - c.src_end) <= _kineto_dep_graph_slack_ns()
      AND c.src_ts < h.ts
      AND c.src_end > h.launched_at
      AND (c.src_launched IS NULL OR c.src_launched <= h.launched_at)
  ),
  latest AS (
    SELECT window_id, src, dst, 'queue' AS kind, 'end' AS constrains, gap,
      row_number() OVER (PARTITION BY dst ORDER BY rank DESC) AS rn
    FROM queue
    UNION ALL
    SELECT window_id, src, dst, 'event', 'start', gap,
      row_number() OVER (PARTITION BY dst ORDER BY rank DESC)
    FROM event
  )
SELECT window_id, src, dst, kind, constrains, gap
FROM latest
WHERE
  rn = 1
ORDER BY kind DESC, dst;

-- Graph edges. A node starts at the latest of its `start` edges' (source end + gap); it ends at the
-- latest of (its start + own duration) and its `end` edges' (source end + gap). Gaps are measured, so the
-- unchanged graph replays to the measured times. The recorded edges and the inferred queue and event edges.
CREATE OR REPLACE PERFETTO TABLE kineto_dep_graph_edges(
  -- Window.
  window_id LONG,
  -- Source node id.
  src LONG,
  -- Destination node id.
  dst LONG,
  -- thread, launch, stream, wait, fork, join (recorded; see _kineto_dep_graph_recorded_edges), queue or
  -- event (inferred; see _kineto_dep_graph_inferred_edges).
  kind STRING,
  -- `start` when the edge holds back the destination's start, `end` when it holds back its end.
  constrains STRING,
  -- Measured destination start (or end) minus source end.
  gap DURATION
) AS
SELECT window_id, src, dst, kind, constrains, gap
FROM _kineto_dep_graph_recorded_edges
UNION ALL
SELECT window_id, src, dst, kind, constrains, gap
FROM _kineto_dep_graph_inferred_edges;
