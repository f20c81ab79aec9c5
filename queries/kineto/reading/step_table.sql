-- id: reading.step_table
-- version: 5
-- kind: reading
-- title: Step table: step width, CPU busy, GPU busy and occupancy per ProfilerStep
-- references: "torch.profiler & HTA: the Framework View", Reading order, step 1; "Profiling in PyTorch: A
--   Beginner's Guide to torch.profiler", "Cold-Start Overhead"
-- needs: none
-- status: stable
-- default sparse_below_pct: 50
-- default cold_start_factor: 1.5

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.ledger;
INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;
INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
INCLUDE PERFETTO MODULE intervals.intersect;

-- CPU busy, the one definition (diagnose's per-step table reads it here): ATen op time (not annotations,
-- not bare python frames) of the window's process inside each ledger window, clipped to the window and
-- merged so nested and concurrent ops count once.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_step_table_cpu_busy(
  -- Ledger window id.
  window_id LONG,
  -- Merged op time inside the window.
  cpu_busy_dur DURATION
) AS
WITH
  -- Each op clipped to each window of its process: one interval intersection per process.
  clipped AS (
    SELECT
      ii.id_0 AS window_id,
      ii.ts,
      ii.dur
    FROM _interval_intersect!(
      (
        (SELECT window_id AS id, window_ts AS ts, window_dur AS dur, upid FROM kineto_ledger_windows WHERE window_dur > 0),
        -- an op inside its parent op (same process) adds nothing to the union: only the outer ones
        (
          SELECT o.id, o.ts, o.dur, o.upid
          FROM kineto_cpu_ops AS o
          LEFT JOIN kineto_cpu_ops AS p
            ON p.id = o.parent_id
          WHERE
            NOT o.is_annotation
            AND o.dur > 0
            AND NOT coalesce(
              NOT p.is_annotation AND p.upid = o.upid AND p.ts <= o.ts AND p.ts + p.dur >= o.ts + o.dur,
              FALSE
            )
        )
      ),
      (upid)
    ) AS ii
  ),
  merged AS (
    SELECT window_id, dur FROM kineto_interval_merge!(clipped, (window_id))
  )
SELECT
  w.window_id,
  coalesce(sum(m.dur), 0) AS cpu_busy_dur
FROM kineto_ledger_windows AS w
LEFT JOIN merged AS m
  ON m.window_id = w.window_id
GROUP BY w.window_id;

-- One row per window of the step-time ledger (ProfilerStep#N, else the inferred iterations, else the
-- capture) and device (device NULL when the trace has no device activity): the step width, how much of it
-- the CPU spent in ops, how much of it the device was busy (the ledger's busy buckets: kernel, memcpy and
-- memset time, a union over streams), and whether the device was sparse. A sparse GPU means the fault is
-- above the kernels (host, input, sync); the first step is flagged when it is a cold start.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_step_table(
  -- GPU occupancy under this % of the step width is called sparse.
  sparse_below_pct DOUBLE,
  -- The first step is a cold start when wider than this times the median of the others.
  cold_start_factor DOUBLE
)
RETURNS TABLE(
  -- Step number N of ProfilerStep#N (or of the inferred iteration).
  step LONG,
  -- Step start.
  ts TIMESTAMP,
  -- Step width: the step time.
  dur DURATION,
  -- Device index, or NULL when the trace has no device activity.
  device LONG,
  -- CPU busy: time inside the window covered by ATen ops (merged over the process's threads).
  cpu_busy_dur DURATION,
  -- cpu_busy_dur as % of the step width.
  cpu_busy_pct DOUBLE,
  -- Time inside the window the device ran a kernel, memcpy or memset (union over streams).
  gpu_busy_dur DURATION,
  -- gpu_busy_dur as % of the step width; NULL without device activity.
  gpu_occupancy_pct DOUBLE,
  -- `sparse` (occupancy under sparse_below_pct: look above the kernels), `busy`, or `no device activity`.
  verdict STRING,
  -- True for the first step when it is wider than cold_start_factor times the median of the others.
  cold_start BOOL
) AS
WITH
  ranked AS (
    SELECT
      w.window_id,
      w.step,
      w.window_ts AS ts,
      w.window_dur AS dur,
      row_number() OVER (ORDER BY w.window_ts) AS position
    FROM kineto_ledger_windows AS w
  ),
  others AS (
    SELECT
      dur,
      row_number() OVER (ORDER BY dur) AS rn,
      count(*) OVER () AS n
    FROM ranked
    WHERE
      position > 1
  ),
  median AS (
    SELECT avg(dur) AS median_dur
    FROM others
    WHERE
      rn IN ((n + 1) / 2, (n + 2) / 2)
  ),
  gpu AS (
    SELECT window_id, device, sum(CASE WHEN kind = 'busy' THEN dur ELSE 0 END) AS gpu_busy_dur
    FROM kineto_ledger
    WHERE
      device IS NOT NULL
    GROUP BY window_id, device
  )
SELECT
  r.step,
  r.ts,
  r.dur,
  g.device,
  c.cpu_busy_dur,
  100.0 * c.cpu_busy_dur / r.dur AS cpu_busy_pct,
  g.gpu_busy_dur,
  100.0 * g.gpu_busy_dur / r.dur AS gpu_occupancy_pct,
  CASE
    WHEN g.device IS NULL THEN 'no device activity'
    WHEN 100.0 * g.gpu_busy_dur / r.dur < $sparse_below_pct THEN 'sparse'
    ELSE 'busy'
  END AS verdict,
  coalesce(
    r.position = 1
    AND (SELECT median_dur FROM median) IS NOT NULL
    AND r.dur > $cold_start_factor * (SELECT median_dur FROM median),
    FALSE
  ) AS cold_start
FROM ranked AS r
JOIN _kineto_reading_step_table_cpu_busy AS c
  USING (window_id)
LEFT JOIN gpu AS g
  USING (window_id)
ORDER BY r.ts, g.device;
