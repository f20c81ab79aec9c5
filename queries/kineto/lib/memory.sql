-- version: 4
-- locked: 4 deab6d93676e1da3
-- lib: lib.event_categories@4 lib.host_slices@8 lib.kernels@6 lib.runtime_calls@4 lib.steps@9
--   lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;

-- Memory activity: the caching allocator's `[memory]` instants (profile_memory=True), one per
-- allocation or free with the running totals, and the device allocator runtime calls that the caching
-- allocator makes when it grows (classes malloc / free of kineto.lib.runtime_calls: cudaMalloc, cudaFree,
-- hipMalloc, hipFree, cuMemAlloc, and cuMemCreate / cuMemRelease of expandable segments).
CREATE OR REPLACE PERFETTO TABLE kineto_memory(
  -- Slice id of the instant or the runtime call.
  id JOINID(slice.id),
  -- When.
  ts TIMESTAMP,
  -- 0 for instants; the call's duration for runtime calls.
  dur DURATION,
  -- `allocator` for [memory] instants, `runtime` for malloc/free calls.
  source STRING,
  -- `alloc` or `free` (instants: by the sign of Bytes).
  kind STRING,
  -- `[memory]` or the runtime API name.
  name STRING,
  -- Bytes allocated (positive) or freed (negative); NULL for runtime calls (Kineto does not record it).
  bytes LONG,
  -- Allocator total allocated after this event (`Total Allocated`).
  total_allocated LONG,
  -- Allocator total reserved after this event (`Total Reserved`).
  total_reserved LONG,
  -- `Device Type` (0 CPU, 1 CUDA, ...) of an instant; NULL for runtime calls.
  device_type LONG,
  -- `Device Id` of an instant (-1 for CPU); NULL for runtime calls.
  device LONG,
  -- The slice it sits under (the op that allocated), or NULL.
  parent_id JOINID(slice.id),
  -- Thread.
  utid JOINID(thread.id),
  -- Process.
  upid JOINID(process.id),
  -- Step number of the CPU ProfilerStep#N window containing it, or NULL.
  step LONG
) AS
WITH
  events AS (
    SELECT
      s.id,
      s.ts,
      s.dur,
      'allocator' AS source,
      CASE
        WHEN extract_arg(s.arg_set_id, 'args.Bytes') < 0 THEN 'free'
        ELSE 'alloc'
      END AS kind,
      s.name,
      extract_arg(s.arg_set_id, 'args.Bytes') AS bytes,
      extract_arg(s.arg_set_id, 'args.Total Allocated') AS total_allocated,
      extract_arg(s.arg_set_id, 'args.Total Reserved') AS total_reserved,
      extract_arg(s.arg_set_id, 'args.Device Type') AS device_type,
      extract_arg(s.arg_set_id, 'args.Device Id') AS device,
      s.parent_id,
      s.utid,
      s.upid
    FROM kineto_thread_track_slices AS s
    WHERE
      s.name = '[memory]'
    UNION ALL
    SELECT
      s.id,
      s.ts,
      s.dur,
      'runtime' AS source,
      CASE
        WHEN r.class = 'free' THEN 'free'
        ELSE 'alloc'
      END AS kind,
      s.name,
      NULL AS bytes,
      NULL AS total_allocated,
      NULL AS total_reserved,
      NULL AS device_type,
      NULL AS device,
      s.parent_id,
      s.utid,
      s.upid
    FROM kineto_runtime_calls AS r
    JOIN kineto_thread_track_slices AS s
      USING (id)
    WHERE
      r.class IN ('malloc', 'free')
  ),
  steps_of AS (
    SELECT id, step FROM _kineto_steps_of!(events)
  )
SELECT
  e.id,
  e.ts,
  e.dur,
  e.source,
  e.kind,
  e.name,
  e.bytes,
  e.total_allocated,
  e.total_reserved,
  e.device_type,
  e.device,
  e.parent_id,
  e.utid,
  e.upid,
  so.step
FROM events AS e
LEFT JOIN steps_of AS so
  USING (id)
ORDER BY e.ts;
