-- id: guide.profiler_flush_sync
-- version: 2
-- kind: guide
-- title: Profiler flush: the final device synchronize, reported as the profiler flushing, not a finding
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Key CPU Lane Indicators:
--   Synchronization"
-- needs: gpu
-- status: stable

-- The last device synchronize of a process (class device_sync of kineto.lib.runtime_calls:
-- cudaDeviceSynchronize, hipDeviceSynchronize, cuCtxSynchronize, cudaThreadSynchronize) counts as the
-- profiler's flush when no op starts and no kernel is launched after it on that process and it lies outside every
-- ProfilerStep window (after the last step, or in a trace without steps). Its duration is the time the
-- CPU waited for pending device work. Detectors that look at syncs should leave this row out.

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;

-- The flush sync per process, if any (at most one row per process).
CREATE OR REPLACE PERFETTO TABLE _kineto_guide_profiler_flush(
  -- Slice id of the synchronize call.
  id JOINID(slice.id),
  -- Process.
  upid JOINID(process.id),
  -- Call start.
  ts TIMESTAMP,
  -- Call duration (the CPU waiting for the device).
  dur DURATION,
  -- Runtime call name.
  name STRING
) AS
WITH
  syncs AS (
    SELECT
      r.id,
      r.upid,
      r.ts,
      r.dur,
      r.name,
      row_number() OVER (PARTITION BY r.upid ORDER BY r.ts DESC) AS rn
    FROM kineto_runtime_calls AS r
    WHERE
      r.class = 'device_sync'
  )
SELECT
  y.id,
  y.upid,
  y.ts,
  y.dur,
  y.name
FROM syncs AS y
WHERE
  y.rn = 1
  AND NOT EXISTS (
    SELECT 1
    FROM kineto_launches AS l
    WHERE
      l.upid = y.upid
      AND l.ts > y.ts
  )
  AND NOT EXISTS (
    SELECT 1
    FROM kineto_steps AS st
    WHERE
      st.upid = y.upid
      AND y.ts >= st.ts
      AND y.ts < st.ts + st.dur
  );

-- One row per flush sync.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_profiler_flush_sync()
RETURNS TABLE(
  -- Call start.
  ts TIMESTAMP,
  -- Call duration.
  dur DURATION,
  -- Runtime call name.
  name STRING,
  -- Device activities still running or queued when the call began.
  pending_activities LONG,
  -- Their device time after the call began.
  pending_dur DURATION,
  -- Gap from the end of the last step to the call, or NULL without steps.
  after_last_step_dur DURATION,
  -- One sentence with the numbers.
  evidence STRING
) AS
SELECT
  f.ts,
  f.dur,
  f.name,
  (SELECT count(*) FROM kineto_kernels AS k WHERE k.ts + k.dur > f.ts AND k.ts < f.ts + f.dur) AS pending_activities,
  coalesce(
    (
      SELECT sum(min(k.ts + k.dur, f.ts + f.dur) - max(k.ts, f.ts))
      FROM kineto_kernels AS k
      WHERE
        k.ts + k.dur > f.ts
        AND k.ts < f.ts + f.dur
    ),
    0
  ) AS pending_dur,
  f.ts - (SELECT max(st.ts + st.dur) FROM kineto_steps AS st WHERE st.upid = f.upid) AS after_last_step_dur,
  printf(
    '%s at the end of the trace waits %.3f ms for %d pending device activities: the profiler flushing its events, not a sync-forcing op (excluded from findings)',
    f.name,
    f.dur / 1e6,
    (SELECT count(*) FROM kineto_kernels AS k WHERE k.ts + k.dur > f.ts AND k.ts < f.ts + f.dur)
  ) AS evidence
FROM _kineto_guide_profiler_flush AS f
ORDER BY f.ts;
