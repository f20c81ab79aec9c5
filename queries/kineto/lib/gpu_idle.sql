-- version: 1
-- locked: 1 a45e29a65ab15f63
-- lib: lib.device_busy@3 lib.event_categories@4 lib.interval_merge@3 lib.kernels@6 lib.stream_busy@4
--   lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.stream_busy;
INCLUDE PERFETTO MODULE kineto.lib.device_busy;

-- Idle gaps between busy intervals: per (device, stream), and per device over all its streams
-- (stream NULL). Only gaps between two busy intervals; the time before the first and after the last
-- activity is not a gap.
CREATE OR REPLACE PERFETTO TABLE kineto_gpu_idle(
  -- Device index.
  device LONG,
  -- Stream, or NULL for a gap when the whole device was idle.
  stream LONG,
  -- Gap start (end of the previous busy interval).
  ts TIMESTAMP,
  -- Gap length.
  dur DURATION
) AS
WITH
  stream_gaps AS (
    SELECT
      device,
      stream,
      ts + dur AS ts,
      lead(ts) OVER (PARTITION BY device, stream ORDER BY ts) - (ts + dur) AS dur
    FROM kineto_stream_busy
  ),
  device_gaps AS (
    SELECT
      device,
      NULL AS stream,
      ts + dur AS ts,
      lead(ts) OVER (PARTITION BY device ORDER BY ts) - (ts + dur) AS dur
    FROM kineto_device_busy
  )
SELECT
  device,
  stream,
  ts,
  dur
FROM stream_gaps
WHERE
  dur > 0
UNION ALL
SELECT
  device,
  stream,
  ts,
  dur
FROM device_gaps
WHERE
  dur > 0
ORDER BY device, stream, ts;
