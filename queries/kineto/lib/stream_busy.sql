-- version: 1
-- locked: 1 c327d81470a5c21f
-- lib: lib.event_categories@2 lib.kernels@2

INCLUDE PERFETTO MODULE kineto.lib.kernels;

-- When each GPU stream was busy: device activities (kernels, memcpys, memsets) of one (device, stream)
-- merged into maximal busy intervals. Touching or overlapping activities merge.
CREATE OR REPLACE PERFETTO TABLE kineto_stream_busy(
  -- Device index.
  device LONG,
  -- Stream.
  stream LONG,
  -- Start of the busy interval.
  ts TIMESTAMP,
  -- Length of the busy interval.
  dur DURATION,
  -- Number of activities merged into it.
  activity_count LONG
) AS
WITH
  ordered AS (
    SELECT
      device,
      stream,
      ts,
      ts + dur AS end_ts,
      max(ts + dur) OVER (
        PARTITION BY device, stream
        ORDER BY ts, ts + dur
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
      ) AS prev_end_ts
    FROM kineto_kernels
  ),
  grouped AS (
    SELECT
      *,
      sum(CASE WHEN prev_end_ts IS NULL OR ts > prev_end_ts THEN 1 ELSE 0 END) OVER (
        PARTITION BY device, stream
        ORDER BY ts, end_ts
        ROWS UNBOUNDED PRECEDING
      ) AS grp
    FROM ordered
  )
SELECT
  device,
  stream,
  min(ts) AS ts,
  max(end_ts) - min(ts) AS dur,
  count(*) AS activity_count
FROM grouped
GROUP BY device, stream, grp
ORDER BY device, stream, ts;
