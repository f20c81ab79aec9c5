-- version: 3
-- locked: 3 125165d3b6269c5c
-- lib: lib.event_categories@4 lib.interval_merge@3 lib.kernels@6 lib.stream_busy@4 lib.thread_slices@2
--   lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
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
SELECT
  device,
  ts,
  dur,
  interval_count
-- in (device, ts) order: the merge's last pass emits its rows sorted that way (no sort here)
FROM kineto_interval_merge!(kineto_stream_busy, (device));
