-- version: 2

INCLUDE PERFETTO MODULE kineto.lib.dep_graph_nodes;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.ledger;
INCLUDE PERFETTO MODULE kineto.lib.ledger_host_states;
INCLUDE PERFETTO MODULE kineto.lib.kernel_class_buckets;
INCLUDE PERFETTO MODULE intervals.intersect;

-- Each window's ledger lane: its process's first device, or its host-only lane.
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_window_lanes(
  -- Window id.
  window_id LONG,
  -- Ledger lane.
  lane LONG
) AS
SELECT it.id AS window_id, coalesce(min(l.lane), (SELECT min(lane) FROM _kineto_ledger_lanes)) AS lane
FROM kineto_iterations AS it
LEFT JOIN _kineto_ledger_lanes AS l
  USING (upid)
GROUP BY it.id;

-- The host and call nodes with time, numbered (the interval intersection takes non-negative ids, and host
-- segments' node ids are negative), with their window's ledger lane.
CREATE OR REPLACE PERFETTO TABLE _kineto_dep_graph_bucket_nodes(
  -- Row number.
  rid LONG,
  -- Node id.
  id LONG,
  -- Start.
  ts TIMESTAMP,
  -- Length.
  dur DURATION,
  -- Ledger lane.
  lane LONG,
  -- Host lane (thread).
  utid LONG
) AS
SELECT row_number() OVER (ORDER BY n.id) AS rid, n.id, n.ts, n.dur, wl.lane, n.utid
FROM kineto_dep_graph_nodes AS n
JOIN _kineto_dep_graph_window_lanes AS wl
  USING (window_id)
WHERE
  n.kind != 'device'
  AND n.dur > 0
ORDER BY rid;

-- By row number.
CREATE OR REPLACE PERFETTO INDEX _kineto_dep_graph_bucket_nodes_rid ON _kineto_dep_graph_bucket_nodes(rid);

-- The ledger bucket of every node's time, named as reading.critical_path names its segments: a device
-- node's whole time is its class's bucket; a host or call node is cut where the ledger's host state
-- changes, each piece with the ledger's bucket for host time then, what no state covers with the bucket for
-- no open host interval. For paths walked over the same graph in Python (kineto_sql.whatif: diagnose's
-- critical path line from the replay, the job's path across ranks).
CREATE OR REPLACE PERFETTO FUNCTION kineto_dep_graph_buckets()
RETURNS TABLE(
  -- Node id (kineto_dep_graph_nodes.id).
  node_id LONG,
  -- Piece start.
  ts TIMESTAMP,
  -- Piece length.
  dur DURATION,
  -- Ledger bucket.
  bucket STRING
) AS
WITH
  -- the intersection takes intervals that do not overlap on each side: the host states once per thread of
  -- their lane (a process's threads run at once)
  threads AS (
    SELECT DISTINCT lane, utid FROM _kineto_dep_graph_bucket_nodes
  ),
  states AS (
    SELECT st.id, st.ts, st.dur, st.lane, t.utid
    FROM kineto_ledger_host_states AS st
    JOIN threads AS t
      USING (lane)
  ),
  pieces AS MATERIALIZED (
    SELECT ii.id_0 AS rid, ii.ts, ii.dur, st.bucket
    FROM _interval_intersect!(
      (
        (SELECT rid AS id, ts, dur, lane, utid FROM _kineto_dep_graph_bucket_nodes),
        (SELECT id, ts, dur, lane, utid FROM states)
      ),
      (lane, utid)
    ) AS ii
    JOIN kineto_ledger_host_states AS st
      ON st.id = ii.id_1
  ),
  -- a lane's host states tile it from the first one's start to the last one's end
  -- (kineto.lib.ledger_host_states), so what no state covers of a node is its time outside that span
  spans AS (
    SELECT lane, min(ts) AS first_ts, max(ts + dur) AS last_end
    FROM kineto_ledger_host_states
    GROUP BY lane
  ),
  uncovered AS (
    SELECT
      h.id,
      h.ts,
      h.dur - max(min(h.ts + h.dur, coalesce(s.last_end, h.ts)) - max(h.ts, coalesce(s.first_ts, h.ts)), 0) AS dur,
      h.lane
    FROM _kineto_dep_graph_bucket_nodes AS h
    LEFT JOIN spans AS s
      USING (lane)
  )
SELECT h.id AS node_id, p.ts, p.dur, p.bucket
FROM pieces AS p
JOIN _kineto_dep_graph_bucket_nodes AS h
  USING (rid)
UNION ALL
SELECT id, ts, dur, _kineto_ledger_bucket!(lane, 0, 0, 0, 0, 0)
FROM uncovered
WHERE
  dur > 0
UNION ALL
SELECT n.id, n.ts, n.dur, coalesce(b.bucket, 'busy.compute_other')
FROM kineto_dep_graph_nodes AS n
LEFT JOIN kineto_kernel_class_buckets AS b
  ON b.class = n.tag
WHERE
  n.kind = 'device'
  AND n.dur > 0;
