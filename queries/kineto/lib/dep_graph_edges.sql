-- version: 2

INCLUDE PERFETTO MODULE kineto.lib.kernels;
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
  -- thread (host order), launch (call -> its device activity), stream (device order) or wait (a
  -- blocking call waits for device work).
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
FROM wait;
