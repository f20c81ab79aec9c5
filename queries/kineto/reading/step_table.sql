-- id: reading.step_table
-- version: 3
-- kind: reading
-- title: Step table: step width, CPU busy, GPU busy and occupancy per ProfilerStep
-- source: "torch.profiler & HTA: the Framework View", Reading order, step 1; "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Cold-Start Overhead"
-- needs: steps
-- status: stable
-- default sparse_below_pct: 50
-- default cold_start_factor: 1.5
-- locked: 3 766dde83d91fde2a
-- lib: lib.cpu_ops@5 lib.device_busy@3 lib.event_categories@4 lib.host_slices@8 lib.host_tree@3
--   lib.interval_merge@3 lib.kernels@6 lib.steps@9 lib.stream_busy@4 lib.thread_slices@2
--   lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.device_busy;
INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
INCLUDE PERFETTO MODULE intervals.intersect;

-- CPU op time inside each step window: ATen ops (not annotations, not bare python frames) of the
-- step's process, clipped to the window and merged so nested and concurrent ops count once.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_step_table_cpu_busy(
  -- Slice id of the step.
  step_id LONG,
  -- Merged op time inside the window.
  cpu_busy_dur DURATION
) AS
WITH
  -- Each op clipped to each window of its process: one interval intersection per process.
  clipped AS (
    SELECT
      ii.id_0 AS step_id,
      ii.ts,
      ii.dur
    FROM _interval_intersect!(
      (
        (SELECT id, ts, dur, upid FROM kineto_steps WHERE dur > 0),
        (SELECT id, ts, dur, upid FROM kineto_cpu_ops WHERE NOT is_annotation AND dur > 0)
      ),
      (upid)
    ) AS ii
  ),
  merged AS (
    SELECT step_id, dur FROM kineto_interval_merge!(clipped, (step_id))
  )
SELECT
  st.id AS step_id,
  coalesce(sum(m.dur), 0) AS cpu_busy_dur
FROM kineto_steps AS st
LEFT JOIN merged AS m
  ON m.step_id = st.id
GROUP BY st.id;

-- Device busy time inside each step window, per device (device busy intervals are already a union
-- over streams, so clipping and summing counts each instant once).
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_step_table_gpu_busy(
  -- Slice id of the step.
  step_id LONG,
  -- Device index.
  device LONG,
  -- Union of kernel, memcpy and memset time of the device inside the window.
  gpu_busy_dur DURATION
) AS
WITH
  busy AS MATERIALIZED (
    SELECT row_number() OVER () AS id, device, ts, dur
    FROM kineto_device_busy
    WHERE
      dur > 0
  ),
  -- Busy intervals clipped to the windows: one interval intersection (materialized, so that the join
  -- below does not run it again per row), summed per window and device.
  pieces AS MATERIALIZED (
    SELECT ii.id_0 AS step_id, ii.id_1 AS busy_id, ii.dur
    FROM _interval_intersect!(
      (
        (SELECT id, ts, dur FROM kineto_steps WHERE dur > 0),
        (SELECT id, ts, dur FROM busy)
      ),
      ()
    ) AS ii
  ),
  inside AS (
    SELECT p.step_id, b.device, sum(p.dur) AS dur
    FROM pieces AS p
    JOIN busy AS b
      ON b.id = p.busy_id
    GROUP BY p.step_id, b.device
  )
SELECT
  st.id AS step_id,
  d.device,
  coalesce(i.dur, 0) AS gpu_busy_dur
FROM kineto_steps AS st
CROSS JOIN (SELECT DISTINCT device FROM kineto_kernels) AS d
LEFT JOIN inside AS i
  ON i.step_id = st.id
  AND i.device = d.device;

-- One row per CPU ProfilerStep#N window and device (device NULL when the trace has no device
-- activity): the step width, how much of it the CPU spent in ops, how much of it the device was busy,
-- and whether the device was sparse. A sparse GPU means the fault is above the kernels (host, input,
-- sync); the first step is flagged when it is a cold start.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_step_table(
  -- GPU occupancy under this % of the step width is called sparse.
  sparse_below_pct DOUBLE,
  -- The first step is a cold start when wider than this times the median of the others.
  cold_start_factor DOUBLE
)
RETURNS TABLE(
  -- Step number N of ProfilerStep#N.
  step LONG,
  -- Step start.
  ts TIMESTAMP,
  -- Step width: the step time.
  dur DURATION,
  -- Device index, or NULL when the trace has no device activity.
  device LONG,
  -- Time inside the window covered by CPU ops (merged over the process's threads).
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
      st.id,
      st.step,
      st.ts,
      st.dur,
      row_number() OVER (ORDER BY st.ts) AS position
    FROM kineto_steps AS st
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
  ON c.step_id = r.id
LEFT JOIN _kineto_reading_step_table_gpu_busy AS g
  ON g.step_id = r.id
ORDER BY r.ts, g.device;
