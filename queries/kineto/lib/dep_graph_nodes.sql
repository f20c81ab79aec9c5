-- version: 2

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.host_tree;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.kernel_classes;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.dataloader;
INCLUDE PERFETTO MODULE kineto.lib.python_gc;

-- The dependency graph of each iteration window (kineto.lib.iterations), for replaying the window with
-- changed durations or dropped edges (kineto_sql.whatif). Nodes: on every host thread that launches or
-- waits, and on the window's main thread, the runtime calls and the host time between them (split where a
-- DataLoader wait, a GC pass or a host read of a tensor value starts or ends), tiling the thread from the
-- window start; the device activities those calls launched, on their streams. Edges carry the measured gap,
-- so the unchanged graph replays to the measured times: thread order, launch -> activity (correlation),
-- stream order, and host waits (a stream / device / event sync waits for the last activity launched before
-- it on every stream of its process that ended before the sync returned; a blocking copy for its own copy).

-- One host lane per thread: the loader's overlap lanes (ranges that overlap without nesting, on their own
-- utid) fold back to their thread (kineto.lib.host_tree's origin), so a thread's calls, host time and
-- tags are one sequence.
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_threads(
  -- Thread (utid).
  utid LONG,
  -- The thread its events belong to.
  lane LONG
) AS
SELECT
  o.utid,
  o.origin_utid AS lane
FROM _kineto_thread_origin AS o;

-- The lane of each process whose end is the window's end: the one with the most top-level ATen op /
-- annotation time (the thread that runs the steps), else the most top-level host time.
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_main_threads(
  -- Process.
  upid LONG,
  -- Its main lane (_kineto_dep_graph_threads.lane).
  utid LONG
) AS
WITH
  per_thread AS (
    SELECT
      h.upid,
      th.lane AS utid,
      sum(CASE WHEN h.event_class = 'cpu_op' THEN h.dur ELSE 0 END) AS op_busy,
      sum(h.dur) AS busy
    FROM kineto_host_slices AS h
    JOIN _kineto_dep_graph_threads AS th
      USING (utid)
    WHERE
      h.depth = 0
      AND h.dur > 0
    GROUP BY h.upid, th.lane
  )
SELECT
  upid,
  utid
FROM (
  SELECT upid, utid, row_number() OVER (PARTITION BY upid ORDER BY op_busy DESC, busy DESC, utid) AS rn
  FROM per_thread
)
WHERE
  rn = 1;

-- Runtime calls that are graph nodes (launches that put work on the device, and calls that block the
-- host), each in the window it starts in.
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_calls(
  -- Slice id of the call.
  id LONG,
  -- Window (kineto_iterations.id).
  window_id LONG,
  -- Call start.
  ts TIMESTAMP,
  -- Call duration.
  dur DURATION,
  -- Thread.
  utid LONG,
  -- Process.
  upid LONG,
  -- Correlation id.
  correlation LONG,
  -- kineto_runtime_calls.class.
  class STRING,
  -- The call blocks the host until device work is done.
  blocks_host BOOL
) AS
WITH
  -- materialized: read twice below (the window sweep and the join), and the correlation test ran again
  -- for every joined row otherwise
  calls AS MATERIALIZED (
    SELECT r.id, r.ts, r.dur, r.utid, r.upid, r.correlation, r.class, r.blocks_host
    FROM kineto_runtime_calls AS r
    WHERE
      r.blocks_host
      OR r.correlation IN (SELECT correlation FROM kineto_kernels WHERE correlation IS NOT NULL)
  )
SELECT
  c.id,
  w.window_id,
  c.ts,
  c.dur,
  th.lane AS utid,
  c.upid,
  c.correlation,
  c.class,
  c.blocks_host
FROM kineto_window_of!(calls) AS w
JOIN calls AS c
  USING (id)
JOIN _kineto_dep_graph_threads AS th
  ON th.utid = c.utid
-- one order whatever the plan (it was the plan's: by lane and time on some traces, by id on others)
ORDER BY th.lane, c.ts, c.id;

-- The graph joins calls by correlation (their device work) and by id: index both.
CREATE OR REPLACE PERFETTO INDEX _kineto_dep_graph_calls_correlation ON _kineto_dep_graph_calls(correlation);

-- By id.
CREATE OR REPLACE PERFETTO INDEX _kineto_dep_graph_calls_id ON _kineto_dep_graph_calls(id);

-- Host intervals that a fix can remove, on their thread: DataLoader waits, GC passes, host reads of a
-- tensor value (`.item()` and kin).
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_tags(
  -- Host lane.
  utid LONG,
  -- Start.
  ts TIMESTAMP,
  -- End.
  end_ts TIMESTAMP,
  -- dataloader, gc or sync_read.
  tag STRING
) AS
WITH
  tagged AS (
    SELECT h.utid, d.ts, d.ts + d.dur AS end_ts, 'dataloader' AS tag
    FROM kineto_dataloader AS d
    JOIN kineto_host_slices AS h
      USING (id)
    UNION ALL
    SELECT tt.utid, g.ts, g.ts + g.dur AS end_ts, 'gc' AS tag
    FROM kineto_python_gc AS g
    JOIN slice AS s
      USING (id)
    JOIN thread_track AS tt
      ON tt.id = s.track_id
    UNION ALL
    SELECT h.utid, h.ts, h.ts + h.dur AS end_ts, 'sync_read' AS tag
    FROM kineto_host_slices AS h
    WHERE
      h.event_class = 'cpu_op'
      AND h.name IN ('aten::_local_scalar_dense', 'aten::nonzero', 'aten::masked_select')
  )
SELECT th.lane AS utid, t.ts, t.end_ts, t.tag
FROM tagged AS t
JOIN _kineto_dep_graph_threads AS th
  USING (utid);

-- The threads of each window that are graph lanes, and how far each is tiled: the main thread to the
-- window end, every other thread with a node call to the end of its last one.
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_lanes(
  -- Window.
  window_id LONG,
  -- Thread.
  utid LONG,
  -- Window start (the tiling starts there).
  ts TIMESTAMP,
  -- Where the tiling ends.
  end_ts TIMESTAMP,
  -- True for the window's main thread.
  is_main BOOL
) AS
WITH
  main AS (
    SELECT it.id AS window_id, m.utid, it.ts, it.ts + it.dur AS end_ts
    FROM kineto_iterations AS it
    JOIN _kineto_dep_graph_main_threads AS m
      USING (upid)
  ),
  others AS (
    SELECT c.window_id, c.utid, it.ts, max(c.ts + c.dur) AS end_ts
    FROM _kineto_dep_graph_calls AS c
    JOIN kineto_iterations AS it
      ON it.id = c.window_id
    GROUP BY c.window_id, c.utid
  )
SELECT window_id, utid, ts, end_ts, TRUE AS is_main
FROM main
UNION ALL
SELECT o.window_id, o.utid, o.ts, o.end_ts, FALSE AS is_main
FROM others AS o
WHERE
  NOT EXISTS (SELECT 1 FROM main AS m WHERE m.window_id = o.window_id AND m.utid = o.utid);

-- Host time between node calls on a lane, cut where a tag interval starts or ends: one sorted sweep per
-- lane over the boundaries (+1 / -1 per open call and per open tag kind).
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_host_segments(
  -- Window.
  window_id LONG,
  -- Thread.
  utid LONG,
  -- Segment start.
  ts TIMESTAMP,
  -- Segment length.
  dur DURATION,
  -- dataloader, gc, sync_read (first that is open, in that order) or host.
  tag STRING
) AS
WITH
  points AS (
    SELECT l.window_id, l.utid, l.ts, 0 AS d_call, 0 AS d_dl, 0 AS d_gc, 0 AS d_sr
    FROM _kineto_dep_graph_lanes AS l
    UNION ALL
    SELECT l.window_id, l.utid, l.end_ts, 0, 0, 0, 0
    FROM _kineto_dep_graph_lanes AS l
    UNION ALL
    SELECT c.window_id, c.utid, c.ts, 1, 0, 0, 0
    FROM _kineto_dep_graph_calls AS c
    UNION ALL
    SELECT c.window_id, c.utid, c.ts + c.dur, -1, 0, 0, 0
    FROM _kineto_dep_graph_calls AS c
    UNION ALL
    SELECT l.window_id, l.utid, max(t.ts, l.ts), 0, t.tag = 'dataloader', t.tag = 'gc', t.tag = 'sync_read'
    FROM _kineto_dep_graph_tags AS t
    JOIN _kineto_dep_graph_lanes AS l
      ON l.utid = t.utid
      AND t.ts < l.end_ts
      AND t.end_ts > l.ts
    UNION ALL
    SELECT
      l.window_id,
      l.utid,
      min(t.end_ts, l.end_ts),
      0,
      -(t.tag = 'dataloader'),
      -(t.tag = 'gc'),
      -(t.tag = 'sync_read')
    FROM _kineto_dep_graph_tags AS t
    JOIN _kineto_dep_graph_lanes AS l
      ON l.utid = t.utid
      AND t.ts < l.end_ts
      AND t.end_ts > l.ts
  ),
  merged AS (
    SELECT window_id, utid, ts, sum(d_call) AS d_call, sum(d_dl) AS d_dl, sum(d_gc) AS d_gc, sum(d_sr) AS d_sr
    FROM points
    GROUP BY window_id, utid, ts
  ),
  swept AS (
    SELECT
      window_id,
      utid,
      ts,
      lead(ts) OVER lane_order AS next_ts,
      sum(d_call) OVER running AS in_call,
      sum(d_dl) OVER running AS in_dl,
      sum(d_gc) OVER running AS in_gc,
      sum(d_sr) OVER running AS in_sr
    FROM merged
    WINDOW
      lane_order AS (PARTITION BY window_id, utid ORDER BY ts),
      running AS (PARTITION BY window_id, utid ORDER BY ts ROWS UNBOUNDED PRECEDING)
  )
SELECT
  s.window_id,
  s.utid,
  s.ts,
  s.next_ts - s.ts AS dur,
  CASE
    WHEN s.in_dl > 0 THEN 'dataloader'
    WHEN s.in_gc > 0 THEN 'gc'
    WHEN s.in_sr > 0 THEN 'sync_read'
    ELSE 'host'
  END AS tag
FROM swept AS s
JOIN _kineto_dep_graph_lanes AS l
  USING (window_id, utid)
WHERE
  s.in_call = 0
  AND s.next_ts > s.ts
  AND s.ts >= l.ts
  AND s.next_ts <= l.end_ts;

-- Graph nodes, one row each.
CREATE OR REPLACE PERFETTO TABLE kineto_dep_graph_nodes(
  -- Node id: the slice id of a call or device activity; a negative number for a host segment.
  id LONG,
  -- Window (kineto_iterations.id).
  window_id LONG,
  -- host (time between calls), call (runtime call) or device (kernel, copy, set).
  kind STRING,
  -- host and call: the thread (utid); device: NULL.
  utid LONG,
  -- device: the device index.
  device LONG,
  -- device: the stream.
  stream LONG,
  -- Measured start.
  ts TIMESTAMP,
  -- Measured duration.
  dur DURATION,
  -- host: dataloader, gc, sync_read or host; call: the runtime call class (launch, stream_sync,
  -- blocking_copy...); device: the fine kernel class of kineto.lib.kernel_classes (gemm, communication...).
  tag STRING,
  -- True for the last node of the window's main thread: its end is the window's end.
  is_window_end BOOL,
  -- device: the end of the activity before it on its stream when that one is not a node of this window
  -- (work queued from before the window), else NULL.
  ready_ts TIMESTAMP
) AS
WITH
  host AS (
    SELECT
      -(row_number() OVER (ORDER BY window_id, utid, ts)) AS id,
      window_id,
      'host' AS kind,
      utid,
      NULL AS device,
      NULL AS stream,
      ts,
      dur,
      tag
    FROM _kineto_dep_graph_host_segments
  ),
  calls AS (
    SELECT id, window_id, 'call' AS kind, utid, NULL AS device, NULL AS stream, ts, dur, class AS tag
    FROM _kineto_dep_graph_calls
  ),
  devices AS (
    SELECT
      k.id,
      c.window_id,
      'device' AS kind,
      NULL AS utid,
      k.device,
      k.stream,
      k.ts,
      k.dur,
      kc.class AS tag
    FROM kineto_kernels AS k
    JOIN _kineto_dep_graph_calls AS c
      USING (correlation)
    JOIN kineto_kernel_classes AS kc
      USING (id)
  ),
  hosts_and_calls AS (
    SELECT * FROM host
    UNION ALL
    SELECT * FROM calls
  ),
  last_on_main AS (
    SELECT n.id
    FROM (
      SELECT
        hc.id,
        row_number() OVER (PARTITION BY hc.window_id ORDER BY hc.ts + hc.dur DESC, hc.ts DESC) AS rn
      FROM hosts_and_calls AS hc
      JOIN _kineto_dep_graph_lanes AS l
        ON l.window_id = hc.window_id
        AND l.utid = hc.utid
        AND l.is_main
    ) AS n
    WHERE
      n.rn = 1
  ),
  stream_prev AS (
    SELECT
      k.id,
      lag(k.id) OVER stream_order AS prev_id,
      lag(k.ts + k.dur) OVER stream_order AS prev_end
    FROM kineto_kernels AS k
    WINDOW stream_order AS (PARTITION BY k.device, k.stream ORDER BY k.ts, k.id)
  )
SELECT
  hc.id,
  hc.window_id,
  hc.kind,
  hc.utid,
  hc.device,
  hc.stream,
  hc.ts,
  hc.dur,
  hc.tag,
  hc.id IN (SELECT id FROM last_on_main) AS is_window_end,
  NULL AS ready_ts
FROM hosts_and_calls AS hc
UNION ALL
SELECT
  d.id,
  d.window_id,
  d.kind,
  d.utid,
  d.device,
  d.stream,
  d.ts,
  d.dur,
  d.tag,
  FALSE AS is_window_end,
  CASE WHEN pd.id IS NULL THEN sp.prev_end END AS ready_ts
FROM devices AS d
JOIN stream_prev AS sp
  USING (id)
LEFT JOIN devices AS pd
  ON pd.id = sp.prev_id
  AND pd.window_id = d.window_id;

-- Edges and the critical path look nodes up by id.
CREATE OR REPLACE PERFETTO INDEX _kineto_dep_graph_nodes_id ON kineto_dep_graph_nodes(id);
