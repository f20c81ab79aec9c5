-- version: 1
-- locked: 1 a56b18dece8aee22
-- lib: lib.event_categories@2 lib.kernels@2 lib.stream_busy@1

INCLUDE PERFETTO MODULE kineto.lib.stream_busy;

-- When each device was busy on any stream: the union of its streams' busy intervals. Sum `dur` for
-- the device's busy time (each instant counted once however many streams run).
CREATE OR REPLACE PERFETTO TABLE kineto_device_busy(
  -- Device index.
  device LONG,
  -- Start of the busy interval.
  ts TIMESTAMP,
  -- Length of the busy interval.
  dur DURATION,
  -- Number of stream busy intervals merged into it.
  interval_count LONG
) AS
WITH
  ordered AS (
    SELECT
      device,
      ts,
      ts + dur AS end_ts,
      max(ts + dur) OVER (
        PARTITION BY device
        ORDER BY ts, ts + dur
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
      ) AS prev_end_ts
    FROM kineto_stream_busy
  ),
  grouped AS (
    SELECT
      *,
      sum(CASE WHEN prev_end_ts IS NULL OR ts > prev_end_ts THEN 1 ELSE 0 END) OVER (
        PARTITION BY device
        ORDER BY ts, end_ts
        ROWS UNBOUNDED PRECEDING
      ) AS grp
    FROM ordered
  )
SELECT
  device,
  min(ts) AS ts,
  max(end_ts) - min(ts) AS dur,
  count(*) AS interval_count
FROM grouped
GROUP BY device, grp
ORDER BY device, ts;
