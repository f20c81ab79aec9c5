-- version: 3
-- locked: 3 61765d3d91504422
-- lib: lib.event_categories@2 lib.interval_merge@2 lib.kernels@5 lib.thread_slices@2
--   lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
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
SELECT
  device,
  stream,
  ts,
  dur,
  interval_count AS activity_count
FROM kineto_interval_merge!((SELECT device, stream, ts, dur FROM kineto_kernels), (device, stream))
ORDER BY device, stream, ts;
