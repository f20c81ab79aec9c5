-- version: 6
-- locked: 6 b70abc72ee311f1c
-- lib: lib.event_categories@4 lib.host_slices@8 lib.kernels@6 lib.runtime_calls@4 lib.steps@9
--   lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;

-- Device activities grouped by correlation id: what one runtime call put on the device (one kernel, or
-- hundreds for a CUDA/HIP graph launch).
CREATE OR REPLACE PERFETTO TABLE _kineto_gpu_by_correlation(
  -- Runtime correlation id.
  correlation LONG,
  -- Number of device activities with this correlation.
  gpu_count LONG,
  -- The earliest of them.
  gpu_first_id LONG,
  -- Start of the earliest.
  gpu_ts TIMESTAMP,
  -- End of the latest.
  gpu_end_ts TIMESTAMP,
  -- Sum of their durations.
  gpu_dur DURATION
) AS
SELECT
  correlation,
  count(*) AS gpu_count,
  -- one activity (the common case): it is the first; only graph launches look theirs up
  CASE
    WHEN count(*) = 1 THEN min(id)
    ELSE (
      SELECT k2.id
      FROM kineto_kernels AS k2
      WHERE
        k2.correlation = k.correlation
      ORDER BY k2.ts, k2.id
      LIMIT 1
    )
  END AS gpu_first_id,
  min(ts) AS gpu_ts,
  max(ts + dur) AS gpu_end_ts,
  sum(dur) AS gpu_dur
FROM kineto_kernels AS k
WHERE
  correlation IS NOT NULL
GROUP BY correlation;

-- Flow arrows (ac2g, async_cpu_to_gpu, 2021 `async`) from a runtime call to a device activity carrying
-- the call's correlation id: used only to confirm the correlation link, since v52 can bind a flow to the
-- wrong kernel. The call is looked up in kineto_runtime_calls by its indexed correlation (its args were
-- read there once), not by reading the slice's args again.
CREATE OR REPLACE PERFETTO TABLE _kineto_confirmed_launch_flows(
  -- Slice id of the runtime call the flow leaves.
  launch_id LONG
) AS
SELECT DISTINCT f.slice_out AS launch_id
FROM flow AS f
JOIN kineto_kernels AS k
  ON k.id = f.slice_in
JOIN kineto_runtime_calls AS r
  ON r.correlation = k.correlation
  AND r.id = f.slice_out
ORDER BY launch_id;

-- Runtime calls that launch device work: the classes launch (cudaLaunchKernel, cuLaunchKernel,
-- hipLaunchKernel, hipExtModuleLaunchKernel, graph launches, MTIA runFunction...) and async_copy (by name:
-- a pageable cudaMemcpyAsync stays a launch) of kineto.lib.runtime_calls, and any other runtime call
-- whose correlation id some device activity carries. Linked to their device activities by
-- `args.correlation` (flows only confirm), and to the CPU op they were called from.
CREATE OR REPLACE PERFETTO TABLE kineto_launches(
  -- Slice id of the runtime call.
  id JOINID(slice.id),
  -- Call start.
  ts TIMESTAMP,
  -- Call duration (CPU time spent in the runtime).
  dur DURATION,
  -- Runtime API name, e.g. cudaLaunchKernel.
  name STRING,
  -- Thread of the call.
  utid JOINID(thread.id),
  -- Process of the call.
  upid JOINID(process.id),
  -- Runtime correlation id (`args.correlation`).
  correlation LONG,
  -- The innermost enclosing CPU op or annotation (the op that launched), or NULL.
  op_id LONG,
  -- Its name, e.g. aten::mm.
  op_name STRING,
  -- Step number of the CPU ProfilerStep#N window containing the call, or NULL.
  step LONG,
  -- Number of device activities with this correlation (0 when none was recorded).
  gpu_count LONG,
  -- Slice id of the first of them.
  gpu_first_id LONG,
  -- Device start of the first of them.
  gpu_ts TIMESTAMP,
  -- Device end of the last of them.
  gpu_end_ts TIMESTAMP,
  -- Summed device time of them.
  gpu_dur DURATION,
  -- gpu_ts - ts: from the call to the device starting the work (launch latency plus queueing).
  launch_delay_dur DURATION,
  -- True when a flow arrow joins this call to one of its activities with a matching correlation.
  flow_confirmed BOOL
) AS
WITH
  -- runtime calls as kineto.lib.runtime_calls classifies them (correlation already read there)
  calls AS (
    SELECT r.id, r.ts, r.dur, r.name, r.utid, r.upid, r.correlation, r.name_class
    FROM kineto_runtime_calls AS r
  ),
  launches AS (
    SELECT
      ca.*,
      g.gpu_count,
      g.gpu_first_id,
      g.gpu_ts,
      g.gpu_end_ts,
      g.gpu_dur
    FROM calls AS ca
    LEFT JOIN _kineto_gpu_by_correlation AS g
      USING (correlation)
    WHERE
      g.correlation IS NOT NULL
      OR ca.name_class IN ('launch', 'async_copy')
  ),
  with_op AS (
    SELECT
      l.*,
      hs.op_id,
      hs.step
    FROM launches AS l
    -- CROSS JOIN: looked up after the filter above, for the launches only
    CROSS JOIN kineto_host_slices AS hs
      USING (id)
  )
SELECT
  w.id,
  w.ts,
  w.dur,
  w.name,
  w.utid,
  w.upid,
  w.correlation,
  w.op_id,
  op.name AS op_name,
  w.step,
  coalesce(w.gpu_count, 0) AS gpu_count,
  w.gpu_first_id,
  w.gpu_ts,
  w.gpu_end_ts,
  w.gpu_dur,
  w.gpu_ts - w.ts AS launch_delay_dur,
  (fc.launch_id IS NOT NULL) AS flow_confirmed
FROM with_op AS w
LEFT JOIN slice AS op
  ON op.id = w.op_id
LEFT JOIN _kineto_confirmed_launch_flows AS fc
  ON fc.launch_id = w.id
ORDER BY w.ts;

-- Queries join launches by correlation (kernels), id and op: index them.
CREATE OR REPLACE PERFETTO INDEX _kineto_launches_correlation ON kineto_launches(correlation);

-- By id.
CREATE OR REPLACE PERFETTO INDEX _kineto_launches_id ON kineto_launches(id);
