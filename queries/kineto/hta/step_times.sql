-- id: hta.step_times
-- version: 1
-- kind: hta
-- title: Profiler steps of one rank: number, start and width (the per-rank input of straggler hunting)
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces (HTA get_profiler_steps;
--   straggler hunting across ranks)
-- needs: steps
-- status: stable

-- Starts are on this trace's own clock in us; kineto_sql.ranks adds the loader's rebase offset
-- (kineto_metadata kineto_sql.ts_offset_ns) to compare ranks, as HTA's global-min alignment does.

INCLUDE PERFETTO MODULE kineto.lib.steps;

-- One row per ProfilerStep#N.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_step_times()
RETURNS TABLE(
  -- N of ProfilerStep#N.
  step LONG,
  -- Step start on the trace clock (after the loader's rebase), us.
  start_us DOUBLE,
  -- Step width, us.
  dur_us DOUBLE
) AS
SELECT step, ts / 1e3 AS start_us, dur / 1e3 AS dur_us
FROM kineto_steps
ORDER BY ts;
