-- id: hta.op_summary
-- version: 2
-- kind: hta
-- title: Per-op and per-kernel counts and total time of one trace (one side of a trace diff)
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces; HolisticTraceAnalysis
--   (TraceDiff.compare_traces)
-- needs: none
-- status: stable
-- default all_steps: FALSE
-- default step: -1

-- HTA's iteration rule: a CPU-side event (args.stream = -1) belongs to the ProfilerStep whose window
-- holds its start; a GPU-side event (args.stream > 0) to the step of the runtime call that launched
-- it (args.correlation). Without any ProfilerStep, all_steps FALSE still returns the whole trace.
-- kineto_sql.trace_diff joins two of these tables by (device, name): appeared, disappeared,
-- count and time deltas.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;
INCLUDE PERFETTO MODULE intervals.intersect;

-- The ProfilerStep#N rows of every process (HTA reads the steps of the whole trace, not per process).
-- Ordered by id: the joins on it below are binary searches.
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_op_steps(
  -- Slice id of the ProfilerStep row.
  id LONG,
  -- Start, ns.
  ts LONG,
  -- Duration, ns.
  dur LONG,
  -- N of ProfilerStep#N.
  n LONG
) AS
SELECT id, ts, dur, CAST(SUBSTR(name, INSTR(name, '#') + 1) AS INT) AS n
FROM _kineto_hta_rows
WHERE name GLOB 'ProfilerStep#[0-9]*' AND stream = -1
ORDER BY id;

-- The step of each CPU row (args.stream = -1): the largest N of the step windows that hold its start
-- (st.ts <= ts < st.ts + st.dur), NULL outside every window. Windows may overlap (several processes
-- each have their steps), so every (row, window) pair is found by one interval intersection of the rows'
-- starts with the windows, and the largest N kept per row: linear in rows + pairs, where a lookup of
-- the steps per row grew as rows x steps (0.37 s at 1x, 2.0 s on a 4x replica).
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_op_cpu_step(
  -- Slice id of the CPU row.
  id LONG,
  -- Its step N.
  n LONG
) AS
SELECT ii.id_0 AS id, max(st.n) AS n
FROM _interval_intersect!(
  (
    (SELECT id, ts, 1 AS dur FROM _kineto_hta_rows WHERE stream = -1),
    (SELECT id, ts, dur FROM _kineto_hta_op_steps WHERE dur > 0)
  ),
  ()
) AS ii
JOIN _kineto_hta_op_steps AS st ON st.id = ii.id_1
GROUP BY ii.id_0
ORDER BY ii.id_0;

-- Every CPU and GPU row with its step: a CPU row's own, a GPU row's the largest step among the CPU rows
-- that carry its correlation (its launcher).
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_op_tagged(
  -- Op, runtime call or kernel name.
  name STRING,
  -- Duration, ns.
  dur LONG,
  -- CPU or GPU.
  device STRING,
  -- Step N, or NULL.
  n LONG
) AS
WITH
  cpu_rows AS (
    SELECT r.name, r.dur, r.correlation, s.n
    FROM _kineto_hta_rows AS r
    LEFT JOIN _kineto_hta_op_cpu_step AS s USING (id)
    WHERE r.stream = -1
  ),
  -- one row per correlation; a window over correlation below hands its step to the GPU rows
  launcher_step AS (
    SELECT correlation, MAX(n) AS n FROM cpu_rows WHERE correlation > 0 GROUP BY correlation
  ),
  gpu_rows AS (
    SELECT r.name, r.dur, r.correlation FROM _kineto_hta_rows AS r WHERE r.stream != -1
  ),
  gpu_tagged AS (
    SELECT name, dur, launcher_n AS n
    FROM (
      SELECT
        name, dur, is_gpu, n,
        -- the launcher's step, carried to the GPU rows of its correlation (they sort after it)
        max(IIF(is_gpu, NULL, n)) OVER (PARTITION BY correlation) AS launcher_n
      FROM (
        SELECT NULL AS name, NULL AS dur, correlation, 0 AS is_gpu, n FROM launcher_step
        UNION ALL
        SELECT name, dur, correlation, 1 AS is_gpu, NULL AS n FROM gpu_rows
      )
    )
    WHERE is_gpu
  )
SELECT name, dur, 'CPU' AS device, n FROM cpu_rows
UNION ALL
SELECT name, dur, 'GPU' AS device, n FROM gpu_tagged;

-- One row per (device, name).
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_op_summary(
  -- TRUE = the whole trace; FALSE = one profiler step only (HTA's default compares the first)
  all_steps BOOL,
  -- With all_steps FALSE, the N of ProfilerStep#N to summarise; -1 = the first step.
  step LONG
)
RETURNS TABLE(
  -- CPU (args.stream = -1) or GPU.
  device STRING,
  -- Op, runtime call or kernel name.
  name STRING,
  -- Occurrences.
  count LONG,
  -- Total duration, us.
  total_us DOUBLE,
  -- Mean duration, us.
  mean_us DOUBLE
) AS
WITH chosen AS (
  SELECT IIF($step >= 0, $step, (SELECT MIN(n) FROM _kineto_hta_op_steps)) AS n
)
SELECT device, name, COUNT(*) AS count, SUM(dur) / 1e3 AS total_us, AVG(dur) / 1e3 AS mean_us
FROM _kineto_hta_op_tagged
WHERE $all_steps OR (SELECT COUNT(*) FROM _kineto_hta_op_steps) = 0 OR n = (SELECT n FROM chosen)
GROUP BY device, name
ORDER BY device, total_us DESC;
