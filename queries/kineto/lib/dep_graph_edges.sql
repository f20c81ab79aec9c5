-- version: 3

INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.dep_graph_nodes;

-- Graph edges. A node starts at the latest of its `start` edges' (source end + gap); it ends at the
-- latest of (its start + own duration) and its `end` edges' (source end + gap). Gaps are measured, so the
-- unchanged graph replays to the measured times.
CREATE OR REPLACE PERFETTO TABLE kineto_dep_graph_edges(
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
      ts - lag(ts + dur) OVER lane AS gap
    FROM lane_nodes
    WINDOW lane AS (PARTITION BY window_id, utid ORDER BY ts, dur)
  ),
  thread_prev AS (
    SELECT t.dst AS id, t.src, n.ts + n.dur AS src_end
    FROM thread_order AS t
    JOIN kineto_dep_graph_nodes AS n
      ON n.id = t.src
    WHERE
      t.src IS NOT NULL
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
      min(0, ts - lag(ts + dur) OVER s) AS gap
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
SELECT window_id, src, dst, 'stream', 'start', gap
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
