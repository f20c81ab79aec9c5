-- id: reading.gap_totals
-- version: 2
-- kind: reading
-- title: GPU gap totals: device idle time per step and cause (input, sync, launch, none)
-- references: "torch.profiler & HTA: the Framework View", Reading order, step 3
-- needs: gpu, steps, cpu_ops
-- status: stable
-- default min_gap: 20us
-- default busy_pct: 50

-- Sums reading.gap_attribution per (step, device, cause); the cause with the most idle time in a step
-- is the step's main host-side fault.

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.reading.gap_attribution;

-- One row per (step, device, cause) with at least one gap.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_gap_totals(
  -- Count device idle gaps (clipped to a step) at least this long.
  min_gap DURATION,
  -- A gap the host spent at least this % inside ops / runtime calls is launch-bound.
  busy_pct DOUBLE
)
RETURNS TABLE(
  -- Step number N of ProfilerStep#N.
  step LONG,
  -- Device index.
  device LONG,
  -- input, sync, launch or none.
  cause STRING,
  -- Number of gaps with this cause.
  gaps LONG,
  -- Their summed length.
  idle_dur DURATION,
  -- The step width.
  step_dur DURATION,
  -- idle_dur as % of the step width.
  pct_of_step DOUBLE,
  -- The most frequent op named by the gaps (see reading.gap_attribution's op column), or NULL.
  top_op STRING,
  -- True for the cause with the most idle time in this step and device.
  is_main_cause BOOL
) AS
WITH
  gaps AS (
    SELECT *
    FROM kineto_reading_gap_attribution($min_gap, $busy_pct)
  ),
  totals AS (
    SELECT
      g.step,
      g.device,
      g.cause,
      count(*) AS gaps,
      sum(g.dur) AS idle_dur
    FROM gaps AS g
    GROUP BY g.step, g.device, g.cause
  ),
  ops AS (
    SELECT
      step,
      device,
      cause,
      op,
      row_number() OVER (
        PARTITION BY step, device, cause
        ORDER BY count(*) DESC, sum(dur) DESC, op
      ) AS rn
    FROM gaps
    WHERE
      op IS NOT NULL
    GROUP BY step, device, cause, op
  ),
  steps AS (
    SELECT
      step,
      max(dur) AS step_dur
    FROM kineto_steps
    GROUP BY step
  )
SELECT
  t.step,
  t.device,
  t.cause,
  t.gaps,
  t.idle_dur,
  s.step_dur,
  round(100.0 * t.idle_dur / s.step_dur, 2) AS pct_of_step,
  o.op AS top_op,
  t.idle_dur = max(t.idle_dur) OVER (PARTITION BY t.step, t.device) AS is_main_cause
FROM totals AS t
JOIN steps AS s
  USING (step)
LEFT JOIN ops AS o
  ON o.step = t.step
  AND o.device = t.device
  AND o.cause = t.cause
  AND o.rn = 1
ORDER BY t.step, t.device, t.idle_dur DESC;
