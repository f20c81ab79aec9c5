-- id: catalog.schedule_distortion
-- version: 5
-- kind: detector
-- title: Profiler schedule distortion: the active window holds a cold or compile step, or too few steps
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, minor fault "Profiler schedule
--   distortion"
-- what: the active window catches a cold step (ProfilerStep#0: no wait/warmup; a first step far
--   wider than the rest that the step-time ledger calls cold; torch.compile compiling inside a step) or
--   captures fewer than 3 steps.
-- confirming: step count; first-step width vs the median of the others; ProfilerStep#0 present;
--   dynamo / inductor compile frames inside a step.
-- why: a cold or compile step in the active window inflates every average taken from the capture; fewer than
--   3 steps leave no steady state to compare. impact_dur is the excess of the cold step over the median,
--   less the Python GC time inside it: a step made wide by a GC pause is catalog.gc_gil_stall's finding
--   (its fix is gc.freeze / gc.disable, not a longer warmup), and it is cold only when it stays at least
--   cold_ratio x the median without the GC time. Width alone is no cold start: the first step is cold only
--   where kineto.lib.iterations marks its window cold (one-time work, allocations, module loads, autotuning,
--   makes up at least half its excess on a capture that launches device work), so a first step slowed by
--   ordinary Python or a slow batch is a step like the others, read as steady by the ledger and never called
--   cold here.
-- known_problems: a capture of inference or a single request (one step is the whole story); a first step
--   that is wide because the data really differs (the longest sequence first).
-- example: few_steps_and_step_zero
-- use_instead: schedule(wait>=1, warmup>=1, active>=3): wait past warmup and compilation, capture at least 3 steps.
-- needs: steps
-- claims: cold
-- status: stable
-- catalog_row: minor.profiler_schedule_distortion
-- default min_steps: 3
-- default cold_ratio: 2

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.python_gc;
INCLUDE PERFETTO MODULE intervals.intersect;

-- One row per distortion found (kinds: few_steps, step_zero, cold_first_step, compile_step).
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_schedule_distortion(
  -- Fewer captured steps than this fires (seed: capture >= 3 steps)
  min_steps LONG,
  -- A first step at least this many times the median of the other steps is cold (warm CPU steps jitter up to
  -- ~1.6x on a shared machine; the golden cold step 0 is 2.6x)
  cold_ratio DOUBLE
)
RETURNS TABLE(
  -- Start of the step concerned (first step for few_steps).
  ts TIMESTAMP,
  -- Its width (the whole capture for few_steps).
  dur DURATION,
  -- Step time distorting the averages: the cold step's excess over the median (0 for few_steps).
  impact_dur DURATION,
  -- Step concerned, or NULL for few_steps.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- few_steps, step_zero, cold_first_step or compile_step.
  kind STRING,
  -- Captured steps.
  step_count LONG,
  -- Median width of the steps after the first (NULL with one step).
  median_other_dur DURATION
) AS
WITH
  main AS (
    -- The process with the most steps (rank traces hold one).
    SELECT upid FROM kineto_steps GROUP BY upid ORDER BY count(*) DESC LIMIT 1
  ),
  s AS (
    SELECT st.*, row_number() OVER (ORDER BY st.ts) AS rn, count(*) OVER () AS n
    FROM kineto_steps AS st
    WHERE
      st.upid = (SELECT upid FROM main)
  ),
  others AS (
    SELECT dur, row_number() OVER (ORDER BY dur) AS k, count(*) OVER () AS m
    FROM s
    WHERE
      rn > 1
  ),
  med AS (
    SELECT avg(dur) AS d FROM others WHERE k IN ((m + 1) / 2, (m + 2) / 2)
  ),
  first AS (
    -- gc: Python GC time inside the step window (clipped to it).
    SELECT
      s.*,
      coalesce(
        (
          SELECT sum(min(g.ts + g.dur, s.ts + s.dur) - max(g.ts, s.ts))
          FROM kineto_python_gc AS g
          WHERE
            g.upid = s.upid
            AND g.ts < s.ts + s.dur
            AND g.ts + g.dur > s.ts
        ),
        0
      ) AS gc
    FROM s
    WHERE
      rn = 1
  ),
  -- compile frames first (one GLOB scan of the slices), then each one's step by an interval intersect of
  -- the frame's start with the steps: linear in slices + steps, not a scan of the slices per step
  compile_frames AS (
    SELECT f.id, f.ts, 1 AS dur
    FROM slice AS f
    WHERE
      f.name GLOB '*torch/_dynamo/convert_frame.py(*): _compile*'
      OR f.name GLOB '*torch/_inductor/compile_fx.py(*): compile_fx*'
      OR f.name GLOB 'Compiled Function*Inductor*'
  ),
  compile_steps AS (
    SELECT s.step, s.ts, s.dur, count(ii.id_0) AS frames
    FROM _interval_intersect!(
      (compile_frames, (SELECT rn AS id, ts, dur FROM s WHERE dur > 0)),
      ()
    ) AS ii
    JOIN s
      ON s.rn = ii.id_1
    GROUP BY s.step
  ),
  found AS (
    SELECT
      f.ts,
      (SELECT max(ts + dur) FROM s) - f.ts AS dur,
      0 AS impact_dur,
      NULL AS step,
      'few_steps' AS kind,
      printf('Only %d ProfilerStep captured (fewer than %d): one step is not a distribution; per-step numbers may be a cold or odd step.', f.n, $min_steps) AS evidence
    FROM first AS f
    WHERE
      f.n < $min_steps
    UNION ALL
    SELECT
      f.ts,
      f.dur,
      CAST(max(f.dur - f.gc - coalesce((SELECT d FROM med), f.dur), 0) AS INT),
      f.step,
      'step_zero',
      printf('The active window starts at ProfilerStep#0 (%.3f ms): no wait/warmup steps, so first-iteration work (allocations, optimizer state init, autotuning) is in the capture.', f.dur / 1e6)
    FROM first AS f
    WHERE
      f.step = 0
    UNION ALL
    SELECT
      f.ts,
      f.dur,
      CAST(f.dur - f.gc - (SELECT d FROM med) AS INT),
      f.step,
      'cold_first_step',
      printf(
        'First captured step %d is %.3f ms, %.1fx the median %.3f ms of the other %d steps%s: a cold step inside the active window.',
        f.step, f.dur / 1e6, (f.dur - f.gc) / (SELECT d FROM med), (SELECT d FROM med) / 1e6, f.n - 1,
        CASE WHEN f.gc > 0 THEN printf(' without its %.3f ms of Python GC', f.gc / 1e6) ELSE '' END
      )
    FROM first AS f
    WHERE
      (SELECT d FROM med) > 0
      AND f.dur - f.gc >= $cold_ratio * (SELECT d FROM med)
      -- the ledger's own reading of the window: cold only when one-time work made it wide
      AND EXISTS (
        SELECT 1
        FROM kineto_iterations AS it
        WHERE
          it.upid = f.upid
          AND it.source = 'profiler_step'
          AND it.step = f.step
          AND it.is_cold
      )
    UNION ALL
    SELECT
      c.ts,
      c.dur,
      CAST(max(c.dur - coalesce((SELECT d FROM med), c.dur), 0) AS INT),
      c.step,
      'compile_step',
      printf('Step %d compiles (%d dynamo/inductor compile frames inside): a compile step in the active window.', c.step, c.frames)
    FROM compile_steps AS c
  )
SELECT
  f.ts,
  f.dur,
  f.impact_dur,
  f.step,
  f.evidence,
  f.kind,
  (SELECT count(*) FROM s) AS step_count,
  CAST((SELECT d FROM med) AS INT) AS median_other_dur
FROM found AS f
ORDER BY f.ts, f.kind;
