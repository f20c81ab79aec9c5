-- id: reading.diff_side
-- version: 4
-- kind: reading
-- title: One side of a trace diff: per step, its width, CPU / GPU busy, GPU time by kernel class, and every op and kernel by call path
-- references: PyTorch docs, torch.profiler (two captures of one workload compared: a headline that says why,
--   rows by time moved, structural alignment); HolisticTraceAnalysis TraceDiff
-- needs: none
-- status: stable

-- kineto_sql/trace_diff.py runs this on both traces and compares them. Rows, all per window (a
-- ProfilerStep; the whole capture, step NULL, when the trace has none):
-- - kind `window`: key `width` (the step time), `cpu_busy` (merged ATen op time of the step's process),
--   `gpu_busy` (device busy, union over streams), from reading.step_table; `kernel_total` (summed device
--   activity time launched in the step, overlaps counted twice, as a per-kernel sum reads).
-- - kind `bucket`: key = a bucket of the step ledger (kineto.lib.ledger: busy.gemm, idle.dataloader,
--   idle.launch, host.ops...), its time in the window, summed over the trace's devices (one per rank
--   trace, usually). On a trace without ProfilerStep the ledger's windows are summed into step NULL,
--   like every other row.
-- - kind `cpu` / `gpu`: one row per (call path, name): an ATen op or annotation, or a device activity,
--   with its count and summed duration. The call path is the chain of enclosing ops and annotations
--   (for a kernel: of the op that launched it), outermost first, ProfilerStep#N written ProfilerStep#*,
--   python frames left out (their line numbers change between runs). Two kernels with the same path and
--   different names are the same work renamed (another vendor library, another compile): the diff
--   pairs them by path.
-- A device activity belongs to the step of the runtime call that launched it (by correlation).

INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.kernel_classes;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.device_busy;
INCLUDE PERFETTO MODULE kineto.lib.ledger;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.reading.step_table;

-- Call path of every host op: its enclosing ops and annotations, outermost first.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_diff_side_paths(
  -- cpu op slice id.
  id LONG,
  -- `ProfilerStep#* > aten::linear > aten::addmm` style path of its ancestors ('' at the root).
  path STRING
) AS
WITH
  chain AS (
    SELECT
      o.id,
      a.depth,
      IIF(a.name GLOB 'ProfilerStep#[0-9]*', 'ProfilerStep#*', a.name) AS name
    FROM kineto_cpu_ops AS o
    CROSS JOIN ancestor_slice(o.id) AS a
    WHERE
      a.id IN (SELECT id FROM kineto_cpu_ops)
    ORDER BY o.id, a.depth
  )
SELECT o.id, coalesce(c.path, '') AS path
FROM kineto_cpu_ops AS o
LEFT JOIN (
  SELECT id, group_concat(name, ' > ') AS path
  FROM chain
  GROUP BY id
) AS c
  USING (id);

-- The kernel side looks paths up by op id.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_diff_side_paths_id ON _kineto_reading_diff_side_paths(id);

-- Device activities join their fine class by id.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_diff_side_classes_id ON kineto_kernel_classes(id);

-- Launch step and launching op per correlation id, for the device activities.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_diff_side_launches(
  -- Runtime correlation id.
  correlation LONG,
  -- Step of the call.
  step LONG,
  -- The op that made the call.
  op_id LONG,
  -- Its name.
  op_name STRING
) AS
SELECT correlation, max(step) AS step, max(op_id) AS op_id, max(op_name) AS op_name
FROM kineto_launches
WHERE
  correlation IS NOT NULL
GROUP BY correlation;

-- The device side looks launches up by correlation.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_diff_side_launches_corr
ON _kineto_reading_diff_side_launches(correlation);

-- Long rows: (step, kind, key, path, count, dur); see the header.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_diff_side()
RETURNS TABLE(
  -- Step number, or NULL (no ProfilerStep: the whole capture; or work launched outside any step).
  step LONG,
  -- window, bucket, cpu or gpu.
  kind STRING,
  -- Window quantity, bucket name, op name or kernel name.
  key STRING,
  -- Call path (cpu / gpu rows), '' otherwise.
  path STRING,
  -- Occurrences (1 for window rows).
  count LONG,
  -- Duration.
  dur DURATION
) AS
WITH
  -- ProfilerStep windows only: the op, kernel and bucket rows below are keyed by ProfilerStep (the step
  -- table also reads inferred iterations; without ProfilerStep the side is the whole capture)
  steps AS (
    SELECT step, dur, cpu_busy_dur, gpu_busy_dur
    FROM kineto_reading_step_table(50, 1.5)
    WHERE
      step IN (SELECT step FROM kineto_steps)
  ),
  device_work AS (
    SELECT k.id, k.dur, k.name, c.class, l.step, l.op_id, l.op_name
    FROM kineto_kernels AS k
    JOIN kineto_kernel_classes AS c
      USING (id)
    LEFT JOIN _kineto_reading_diff_side_launches AS l
      ON l.correlation = k.correlation
  ),
  span AS (
    SELECT
      (SELECT max(ts + dur) - min(ts) FROM slice WHERE dur >= 0) AS width,
      (SELECT sum(dur) FROM kineto_device_busy) AS gpu_busy
  ),
  windows AS (
    SELECT step, 'width' AS key, dur FROM steps
    UNION ALL
    SELECT step, 'cpu_busy', cpu_busy_dur FROM steps WHERE cpu_busy_dur IS NOT NULL
    UNION ALL
    SELECT step, 'gpu_busy', coalesce(gpu_busy_dur, 0) FROM steps
    UNION ALL
    SELECT NULL, 'width', width FROM span WHERE NOT EXISTS (SELECT 1 FROM steps)
    UNION ALL
    SELECT NULL, 'gpu_busy', coalesce(gpu_busy, 0) FROM span WHERE NOT EXISTS (SELECT 1 FROM steps)
  ),
  kernel_totals AS (
    SELECT IIF(EXISTS (SELECT 1 FROM steps), step, NULL) AS step, sum(dur) AS dur
    FROM device_work
    GROUP BY 1
  )
SELECT step, 'window' AS kind, key, '' AS path, 1 AS count, dur FROM windows
UNION ALL
SELECT step, 'window', 'kernel_total', '', 1, dur FROM kernel_totals
UNION ALL
SELECT IIF(EXISTS (SELECT 1 FROM steps), l.step, NULL), 'bucket', l.bucket, '', sum(l.segment_count), sum(l.dur)
FROM kineto_ledger AS l
WHERE
  l.source = 'profiler_step'
  OR NOT EXISTS (SELECT 1 FROM steps)
GROUP BY 1, 3
UNION ALL
SELECT
  IIF(EXISTS (SELECT 1 FROM steps), d.step, NULL),
  'gpu',
  d.name,
  CASE
    WHEN d.op_name IS NULL THEN ''
    WHEN coalesce(p.path, '') = '' THEN d.op_name
    ELSE p.path || ' > ' || d.op_name
  END,
  count(*),
  sum(d.dur)
FROM device_work AS d
LEFT JOIN _kineto_reading_diff_side_paths AS p
  ON p.id = d.op_id
GROUP BY 1, 3, 4
UNION ALL
SELECT IIF(EXISTS (SELECT 1 FROM steps), o.step, NULL), 'cpu', o.name, p.path, count(*), sum(o.dur)
FROM kineto_cpu_ops AS o
JOIN _kineto_reading_diff_side_paths AS p
  USING (id)
WHERE
  NOT o.name GLOB 'ProfilerStep#[0-9]*'
GROUP BY 1, 3, 4;
