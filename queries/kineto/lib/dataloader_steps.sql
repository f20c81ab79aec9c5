-- version: 1
-- locked: 1 791a49884231b6b2
-- lib: lib.dataloader@4 lib.device_busy@3 lib.event_categories@4 lib.interval_merge@3 lib.kernels@6
--   lib.steps@9 lib.stream_busy@4 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.device_busy;
INCLUDE PERFETTO MODULE kineto.lib.dataloader;

-- Per step: how long the step waited in DataLoader `next()`, what share of the step that is, how far
-- into the step the first call started, and how busy the GPU was meanwhile (NULL without GPU activity).
CREATE OR REPLACE PERFETTO TABLE kineto_dataloader_steps(
  -- Step number.
  step LONG,
  -- Step start.
  step_ts TIMESTAMP,
  -- Step width.
  step_dur DURATION,
  -- First next() start.
  ts TIMESTAMP,
  -- Number of next() calls in the step.
  call_count LONG,
  -- Summed next() time.
  loader_dur DURATION,
  -- loader_dur as % of the step.
  loader_pct DOUBLE,
  -- First call start minus step start, as % of the step (0 = the step opens with it).
  start_offset_pct DOUBLE,
  -- `in_process`, `workers`, `unknown` (the kind of the longest call).
  iter_kind STRING,
  -- Device busy time (any device) inside the next() calls, as % of loader_dur; NULL without GPU work.
  gpu_busy_pct DOUBLE
) AS
WITH
  per_call AS (
    SELECT
      n.*,
      st.ts AS step_ts,
      st.dur AS step_dur,
      (
        SELECT sum(min(b.ts + b.dur, n.ts + n.dur) - max(b.ts, n.ts))
        FROM kineto_device_busy AS b
        WHERE
          b.ts < n.ts + n.dur
          AND b.ts + b.dur > n.ts
      ) AS busy_dur
    FROM kineto_dataloader AS n
    JOIN kineto_steps AS st
      ON st.step = n.step
      AND st.upid = n.upid
  ),
  ranked AS (
    SELECT *, row_number() OVER (PARTITION BY step ORDER BY dur DESC) AS rn FROM per_call
  )
SELECT
  step,
  min(step_ts) AS step_ts,
  min(step_dur) AS step_dur,
  min(ts) AS ts,
  count(*) AS call_count,
  sum(dur) AS loader_dur,
  100.0 * sum(dur) / max(min(step_dur), 1) AS loader_pct,
  100.0 * (min(ts) - min(step_ts)) / max(min(step_dur), 1) AS start_offset_pct,
  max(CASE WHEN rn = 1 THEN iter_kind END) AS iter_kind,
  CASE
    WHEN EXISTS (SELECT 1 FROM kineto_device_busy) THEN 100.0 * coalesce(sum(busy_dur), 0) / max(sum(dur), 1)
  END AS gpu_busy_pct
FROM ranked
GROUP BY step
ORDER BY step;
