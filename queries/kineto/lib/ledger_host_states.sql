-- version: 2

INCLUDE PERFETTO MODULE kineto.lib.ledger;

-- What the step ledger (kineto.lib.ledger) calls the host's time at every instant, as if the device were
-- idle then: the same host intervals, the same short device gaps and the same precedence
-- (_kineto_ledger_bucket) as the ledger's sweep, but over every host interval of the lane's process, not
-- only those that overlap device idle time. Where the device is idle this is the ledger's own bucket; where
-- it is busy it names what the host was doing (idle.launch inside a launching op, idle.sync in a sync...),
-- which is what a reading of host work on a dependency path needs (reading.critical_path). Stretches of
-- one bucket are merged; they tile each lane from its first host interval to its last.
CREATE OR REPLACE PERFETTO TABLE kineto_ledger_host_states(
  -- Row number.
  id LONG,
  -- Ledger lane (a device, or -1 - upid for a host-only lane).
  lane LONG,
  -- Host process of the lane.
  upid LONG,
  -- Stretch start.
  ts TIMESTAMP,
  -- Stretch length.
  dur DURATION,
  -- The ledger's bucket for host time then (idle.* on a device lane, host.* on a host-only lane).
  bucket STRING
) AS
WITH
  intervals AS (
    SELECT l.lane, h.ts, h.dur, h.h1, h.h2, h.h3
    FROM _kineto_ledger_host_kinds AS h
    JOIN _kineto_ledger_lanes AS l
      USING (upid)
    UNION ALL
    SELECT l.lane, g.ts, g.dur, 0, 281474976710656, 0
    FROM _kineto_ledger_short_gaps AS g
    JOIN _kineto_ledger_lanes AS l
      ON l.device = g.device
  ),
  events AS (
    SELECT lane, ts, sum(h1) AS h1, sum(h2) AS h2, sum(h3) AS h3
    FROM (
      SELECT lane, ts, h1, h2, h3 FROM intervals
      UNION ALL
      SELECT lane, ts + dur, -h1, -h2, -h3 FROM intervals
    )
    GROUP BY lane, ts
  ),
  -- the first and last instant of each lane: a lane's first instant starts a stretch, its last closes one
  bounds AS MATERIALIZED (
    SELECT lane, min(ts) AS first_ts, max(max(ts), max(ts + dur)) AS last_ts
    FROM intervals
    GROUP BY lane
  ),
  -- the running sums at an instant are the open counts until the next instant; less the instant's own
  -- events they are the counts until it, so the bucket before each instant needs no second pass
  swept AS (
    SELECT
      lane,
      ts,
      h1,
      h2,
      h3,
      sum(h1) OVER w AS q1,
      sum(h2) OVER w AS q2,
      sum(h3) OVER w AS q3
    FROM events
    WINDOW w AS (PARTITION BY lane ORDER BY ts ROWS UNBOUNDED PRECEDING)
  ),
  named AS (
    SELECT
      lane,
      ts,
      _kineto_ledger_bucket!(lane, 0, 0, q1, q2, q3) AS bucket,
      _kineto_ledger_bucket!(lane, 0, 0, q1 - h1, q2 - h2, q3 - h3) AS prev
    FROM swept
  ),
  -- a stretch starts where the bucket changes; the last instant of a lane closes it
  starts AS (
    SELECT n.lane, n.ts, n.bucket
    FROM named AS n
    JOIN bounds AS b
      USING (lane)
    WHERE
      n.prev IS NOT n.bucket
      OR n.ts = b.first_ts
      OR n.ts = b.last_ts
  )
SELECT row_number() OVER (ORDER BY lane, ts) AS id, lane, upid, ts, dur, bucket
FROM (
  SELECT
    s.lane,
    l.upid,
    s.ts,
    lead(s.ts) OVER (PARTITION BY s.lane ORDER BY s.ts) - s.ts AS dur,
    s.bucket
  FROM starts AS s
  JOIN _kineto_ledger_lanes AS l
    USING (lane)
)
WHERE
  dur > 0
ORDER BY lane, ts;

-- By row.
CREATE OR REPLACE PERFETTO INDEX _kineto_ledger_host_states_id ON kineto_ledger_host_states(id);
