-- version: 4
-- locked: 4 b1add9322752c55f
-- lib: lib.event_categories@4 lib.interval_merge@3 lib.kernels@6 lib.thread_slices@2
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
-- in (device, stream, ts) order: the merge's last pass emits its rows sorted that way (no sort here)
FROM kineto_interval_merge!((SELECT device, stream, ts, dur FROM kineto_kernels), (device, stream));
