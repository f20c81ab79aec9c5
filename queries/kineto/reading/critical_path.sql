-- id: reading.critical_path
-- version: 9
-- kind: reading
-- title: Critical path: the chain of host work, launches, device work and waits that sets each window's width
-- references: the reading order's question "what does the step wait on", over the dependency graph of
--   kineto.lib.dep_graph_edges
-- needs: none
-- status: preview

-- Walks each window's dependency graph (kineto.lib.dep_graph_nodes, dep_graph_edges) back from the end of
-- its main thread, at each node to the edge that held it back (the one whose source end plus gap is its measured start, or, for a
-- blocking call that waited, the device work it waited for). Each node on the path gives the time from its
-- predecessor's end to its own end (or to where the stretch after it begins, when that is earlier: a call
-- that returned before the copy it waited for is timed to end), its own part in the node's bucket, the rest
-- (a launch's latency) in `idle.launch`. The segments of a window sum to its width. Buckets are the step ledger's own
-- (kineto.lib.ledger), never a second classification: a device node's segment is the bucket the ledger
-- gives its kernel class when it runs alone (_kineto_ledger_bucket of its class's counts), a host node's
-- segment is cut where the ledger's host state changes and each piece gets the bucket the ledger gives
-- host time then (kineto.lib.ledger_host_states: idle.launch inside an op that launches, idle.sync in a
-- sync, idle.host_compute in other host work...; host.* on a capture without device activity).

INCLUDE PERFETTO MODULE kineto.lib.dep_graph_edges;
INCLUDE PERFETTO MODULE kineto.lib.dep_graph_buckets;
INCLUDE PERFETTO MODULE kineto.lib.ledger_host_states;
INCLUDE PERFETTO MODULE kineto.lib.kernel_class_buckets;
INCLUDE PERFETTO MODULE intervals.intersect;

-- For each node: the predecessor that held it back and when the node's own part began.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_critical_path_binding(
  -- Node id.
  id LONG,
  -- The predecessor on the path, or NULL at the path's start.
  pred LONG,
  -- The predecessor's end.
  pred_end TIMESTAMP,
  -- Edge kind to the predecessor.
  via STRING,
  -- Where the node's own part begins: its start, or the end of the work it waited for.
  entry_ts TIMESTAMP
) AS
WITH
  edges AS (
    SELECT
      e.dst,
      e.src,
      e.kind,
      e.constrains,
      n.ts + n.dur AS src_end,
      n.ts + n.dur + e.gap AS held_to,
      -- at a tie the device queue, then another stream's work it waited for (an inferred event edge), is the
      -- reason before the launch
      CASE e.kind WHEN 'stream' THEN 0 WHEN 'event' THEN 1 WHEN 'wait' THEN 2 WHEN 'thread' THEN 3 ELSE 4 END AS pri
    FROM kineto_dep_graph_edges AS e
    JOIN kineto_dep_graph_nodes AS n
      ON n.id = e.src
  ),
  waits AS (
    SELECT dst, src, kind, src_end
    FROM (
      SELECT e.*, row_number() OVER (PARTITION BY e.dst ORDER BY e.src_end DESC, e.src) AS rn
      FROM edges AS e
      WHERE
        e.constrains = 'end'
    )
    WHERE
      rn = 1
  ),
  starts AS (
    SELECT dst, src, kind, src_end, held_to
    FROM (
      SELECT e.*, row_number() OVER (PARTITION BY e.dst ORDER BY e.held_to DESC, e.pri, e.src) AS rn
      FROM edges AS e
      WHERE
        e.constrains = 'start'
    )
    WHERE
      rn = 1
  )
SELECT
  n.id,
  CASE
    WHEN w.dst IS NOT NULL AND w.src_end > n.ts THEN w.src
    WHEN s.held_to >= n.ts THEN s.src
  END AS pred,
  CASE
    WHEN w.dst IS NOT NULL AND w.src_end > n.ts THEN w.src_end
    WHEN s.held_to >= n.ts THEN s.src_end
  END AS pred_end,
  CASE
    WHEN w.dst IS NOT NULL AND w.src_end > n.ts THEN w.kind
    WHEN s.held_to >= n.ts THEN s.kind
  END AS via,
  CASE
    WHEN w.dst IS NOT NULL AND w.src_end > n.ts THEN min(w.src_end, n.ts + n.dur)
    ELSE n.ts
  END AS entry_ts
FROM kineto_dep_graph_nodes AS n
LEFT JOIN waits AS w
  ON w.dst = n.id
LEFT JOIN starts AS s
  ON s.dst = n.id;

-- By node.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_critical_path_binding_id
ON _kineto_reading_critical_path_binding(id);

-- The binding numbered 0 to n-1 by node id, each node's predecessor by its number: the walk steps from
-- number to number, which the engine reads by position (a join on node ids scanned the table at every
-- step: 145 s on a trace of 28,535 nodes, against 0.1 s).
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_critical_path_rows(
  -- Row number, 0 to n-1.
  id LONG,
  -- Node id.
  node LONG,
  -- The predecessor's row number, or NULL at the path's start.
  pred_row LONG,
  -- The predecessor's end.
  pred_end TIMESTAMP
) AS
WITH
  numbered AS (
    SELECT row_number() OVER (ORDER BY id) - 1 AS row_id, id, pred, pred_end
    FROM _kineto_reading_critical_path_binding
  )
SELECT a.row_id AS id, a.id AS node, p.row_id AS pred_row, a.pred_end
FROM numbered AS a
LEFT JOIN numbered AS p
  ON p.id = a.pred
ORDER BY a.row_id;

-- Each window's critical path, walked back from its end: the own part and the part before it (a launch's
-- latency) of every node on it, numbered, with the window's ledger lane.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_critical_path_parts(
  -- Part number.
  part_id LONG,
  -- Window id.
  window_id LONG,
  -- Node id.
  id LONG,
  -- Node kind.
  kind STRING,
  -- Node tag.
  tag STRING,
  -- Part start.
  ts TIMESTAMP,
  -- Part length.
  dur DURATION,
  -- own or gap.
  part STRING,
  -- The window's ledger lane (its process's first device, or its host-only lane).
  lane LONG
) AS
WITH RECURSIVE
  -- cap: where the node's stretch of the path ends, the earliest end of the nodes walked so far: a blocking
  -- call can return a few us before the work it waited for is timed to end (the host's and the device's
  -- clocks disagree), and that work holds the path only until the call returned, not twice over
  walk(window_id, at_row, hop, cap) AS (
    SELECT n.window_id, r.id, 0, n.ts + n.dur
    FROM kineto_dep_graph_nodes AS n
    JOIN _kineto_reading_critical_path_rows AS r
      ON r.node = n.id
    WHERE
      n.is_window_end
    UNION ALL
    SELECT w.window_id, r.pred_row, w.hop + 1, min(w.cap, r.pred_end)
    FROM walk AS w
    JOIN _kineto_reading_critical_path_rows AS r
      ON r.id = w.at_row
    WHERE
      r.pred_row IS NOT NULL
      -- a cycle (host and device clocks skewed) ends the walk instead of looping
      AND w.hop < (SELECT count(*) FROM kineto_dep_graph_nodes)
  ),
  on_path AS (
    SELECT
      w.window_id,
      n.id,
      n.kind,
      n.tag,
      w.cap AS end_ts,
      b.entry_ts,
      b.via,
      coalesce(b.pred_end, it.ts) AS from_ts,
      it.ts AS window_ts
    FROM walk AS w
    JOIN _kineto_reading_critical_path_rows AS r
      ON r.id = w.at_row
    JOIN kineto_dep_graph_nodes AS n
      ON n.id = r.node
    JOIN _kineto_reading_critical_path_binding AS b
      ON b.id = r.node
    JOIN kineto_iterations AS it
      ON it.id = w.window_id
  ),
  parts AS (
    -- the node's own part
    SELECT
      window_id,
      id,
      kind,
      tag,
      max(entry_ts, from_ts, window_ts) AS ts,
      end_ts - max(entry_ts, from_ts, window_ts) AS dur,
      'own' AS part
    FROM on_path
    UNION ALL
    -- from the predecessor's end to the node's start: a launch's latency (or queued work from before)
    SELECT
      window_id,
      id,
      kind,
      tag,
      max(from_ts, window_ts) AS ts,
      min(entry_ts, end_ts) - max(from_ts, window_ts) AS dur,
      'gap' AS part
    FROM on_path
  )
SELECT
  row_number() OVER (ORDER BY p.window_id, p.ts, p.id, p.part) AS part_id,
  p.window_id,
  p.id,
  p.kind,
  p.tag,
  p.ts,
  p.dur,
  p.part,
  wl.lane
FROM parts AS p
JOIN _kineto_dep_graph_window_lanes AS wl
  USING (window_id)
WHERE
  p.dur > 0;

-- By part.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_critical_path_parts_id ON _kineto_reading_critical_path_parts(part_id);

-- The parts of host and call nodes cut where the ledger's host state changes, each piece with the
-- ledger's bucket for host time then (kineto_ledger_host_states); what no state covers gets the ledger's
-- bucket for no open host interval.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_critical_path_host(
  -- Part number.
  part_id LONG,
  -- Piece start.
  ts TIMESTAMP,
  -- Piece length.
  dur DURATION,
  -- Ledger bucket.
  bucket STRING
) AS
WITH
  host_parts AS (
    SELECT part_id, ts, dur, lane
    FROM _kineto_reading_critical_path_parts
    WHERE
      kind != 'device'
  ),
  pieces AS (
    SELECT ii.id_0 AS part_id, ii.ts, ii.dur, st.bucket
    FROM _interval_intersect!(
      (
        (SELECT part_id AS id, ts, dur, lane FROM host_parts),
        (SELECT id, ts, dur, lane FROM kineto_ledger_host_states)
      ),
      (lane)
    ) AS ii
    JOIN kineto_ledger_host_states AS st
      ON st.id = ii.id_1
  ),
  covered AS (
    SELECT part_id, sum(dur) AS dur
    FROM pieces
    GROUP BY part_id
  )
SELECT part_id, ts, dur, bucket FROM pieces
UNION ALL
SELECT hp.part_id, hp.ts, hp.dur - coalesce(c.dur, 0), _kineto_ledger_bucket!(hp.lane, 0, 0, 0, 0, 0)
FROM host_parts AS hp
LEFT JOIN covered AS c
  USING (part_id)
WHERE
  hp.dur > coalesce(c.dur, 0);

-- One row per segment of each window's critical path, in time order.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_critical_path()
RETURNS TABLE(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- Iteration number.
  step LONG,
  -- The window is a cold start.
  is_cold BOOL,
  -- Window width.
  window_dur DURATION,
  -- Node id (kineto_dep_graph_nodes.id): a slice id, or a negative host-segment id.
  node_id LONG,
  -- host, call or device.
  node_kind STRING,
  -- The node's tag (dataloader, launch, stream_sync, gemm...).
  node_tag STRING,
  -- Segment start.
  ts TIMESTAMP,
  -- Segment length.
  dur DURATION,
  -- Ledger bucket of the segment (busy.gemm, idle.sync, idle.launch, host.dataloader...).
  bucket STRING
) AS
WITH
  named AS (
    SELECT p.window_id, p.id, p.kind, p.tag, h.ts, h.dur, h.bucket
    FROM _kineto_reading_critical_path_host AS h
    JOIN _kineto_reading_critical_path_parts AS p
      USING (part_id)
    UNION ALL
    SELECT
      window_id,
      id,
      kind,
      tag,
      ts,
      dur,
      CASE
        WHEN part = 'gap' THEN 'idle.launch'
        -- a device part runs alone on the path: its class's bucket (the one class -> bucket map)
        ELSE coalesce((SELECT b.bucket FROM kineto_kernel_class_buckets AS b WHERE b.class = tag), 'busy.compute_other')
      END AS bucket
    FROM _kineto_reading_critical_path_parts
    WHERE
      kind = 'device'
  )
SELECT
  p.window_id,
  it.step,
  it.is_cold,
  it.dur AS window_dur,
  p.id AS node_id,
  p.kind AS node_kind,
  p.tag AS node_tag,
  p.ts,
  p.dur,
  p.bucket
FROM named AS p
JOIN kineto_iterations AS it
  ON it.id = p.window_id
WHERE
  p.dur > 0
ORDER BY p.window_id, p.ts, p.id;
