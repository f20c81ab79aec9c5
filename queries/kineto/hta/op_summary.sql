-- id: hta.op_summary
-- version: 1
-- kind: hta
-- title: Per-op and per-kernel counts and total time of one trace (one side of a trace diff)
-- source: seed 000 section 4 (HTA); research/peers.md 1.10 (TraceDiff.compare_traces)
-- needs: none
-- status: stable
-- default all_steps: FALSE
-- default step: -1
-- locked: 1 b149157e8177a133
-- lib: hta.gpu_events@7 lib.event_categories@2 lib.kernels@4 lib.thread_slices@2 lib.thread_track_slices@1

-- HTA's iteration rule: a CPU-side event (args.stream = -1) belongs to the ProfilerStep whose window
-- holds its start; a GPU-side event (args.stream > 0) to the step of the runtime call that launched
-- it (args.correlation). Without any ProfilerStep, all_steps FALSE still returns the whole trace.
-- kineto_sql.trace_diff joins two of these tables by (device, name): appeared, disappeared,
-- count and time deltas.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

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
WITH steps AS MATERIALIZED (
  SELECT ts, ts + dur AS end_ts, CAST(SUBSTR(name, INSTR(name, '#') + 1) AS INT) AS n
  FROM _kineto_hta_rows
  WHERE name GLOB 'ProfilerStep#[0-9]*' AND stream = -1
),
chosen AS (
  SELECT IIF($step >= 0, $step, (SELECT MIN(n) FROM steps)) AS n
),
cpu_rows AS (
  SELECT
    r.name, r.dur, r.correlation,
    (SELECT MAX(st.n) FROM steps st WHERE r.ts >= st.ts AND r.ts < st.end_ts) AS n
  FROM _kineto_hta_rows r
  WHERE r.stream = -1
),
launcher_step AS MATERIALIZED (
  SELECT correlation, MAX(n) AS n FROM cpu_rows WHERE correlation > 0 GROUP BY correlation
),
tagged AS (
  SELECT name, dur, 'CPU' AS device, n FROM cpu_rows
  UNION ALL
  SELECT r.name, r.dur, 'GPU' AS device, l.n
  FROM _kineto_hta_rows r LEFT JOIN launcher_step l USING (correlation)
  WHERE r.stream != -1
)
SELECT device, name, COUNT(*) AS count, SUM(dur) / 1e3 AS total_us, AVG(dur) / 1e3 AS mean_us
FROM tagged
WHERE $all_steps OR (SELECT COUNT(*) FROM steps) = 0 OR n = (SELECT n FROM chosen)
GROUP BY device, name
ORDER BY device, total_us DESC;
