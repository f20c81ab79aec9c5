-- id: catalog.with_stack_overhead
-- version: 10
-- kind: detector
-- title: with_stack overhead: a capture with Python stack tracing, whose step times are inflated
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, minor fault "with_stack overhead"
-- what: python_function events (with_stack=True) or `Call stack` args on the ops in every step: the
--   profiler traced every Python call, a 2-3x CPU-side slowdown on Python-heavy steps. A step is a window
--   of the step-time ledger: a ProfilerStep, else an inferred iteration, else the whole capture (tracing
--   costs the same whatever marks the iterations, so a capture without a schedule is read too).
-- confirming: python frames per step and per launch, the estimated tracing cost (frames x per-frame
--   cost, at most the frames' own time) against the step's host-bound time (device idle while the host
--   computes or issues launches; Python outside ATen ops on a CPU-only capture), as a share of the step.
-- why: recording every Python frame slows the host 2-3x on Python-heavy steps ("torch.profiler & HTA: the
--   Framework View", minor fault "with_stack overhead": fine for attribution runs, wrong for timing runs),
--   so the capture's step times
--   and host-bound readings are inflated. The estimate is frames x frame_cost (2 us, the low end of the
--   1.9-2.7 us per frame measured on CPU captures), never more than the frames' own time outside their
--   children, where the tracer's cost is recorded: a bound taken from the trace itself. Tracing adds that
--   host time to every launch's issue path (frames per launch x cost per frame), and it costs step time
--   only where the host is on the critical path: impact_dur is the estimate capped to the step's
--   host-bound time, the ledger's idle.launch + idle.host_compute (device idle while the host issues or
--   computes) on the device the step waits most on, or host.python on a CPU-only capture (the frames' own
--   time is Python outside ATen ops: the tracer's cost never lands in an op's time). The
--   gate is that impact against the step, so a device-bound step with a few thousand frames stays silent
--   and a host-bound step with 15 frames per launch fires however wide the step.
-- known_problems: a capture taken with stacks on purpose to find a line of code: the finding is then a
--   reminder not to read timings from it.
-- example: threshold_1
-- use_instead: two captures, two purposes: with_stack=True for attribution, with_stack=False (and no
--   record_shapes/profile_memory) for timing.
-- needs: none
-- claims: idle.host_compute, idle.launch, host.python
-- status: stable
-- catalog_row: minor.with_stack_overhead
-- default frame_cost: 2us
-- default min_overhead_pct: 20

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim_buckets;
INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;

-- One row per window of the step-time ledger (a ProfilerStep, else an inferred iteration, else the capture:
-- stacks cost the same whichever marks the iterations) whose estimated stack-tracing overhead is material.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_with_stack_overhead(
  -- Estimated tracing cost per recorded python frame or stacked op (2 us: the low end of the 1.9-2.7 us
  -- measured per frame on CPU captures; the frames' own time bounds it from above).
  frame_cost DURATION,
  -- An impact (the estimate capped to the step's host-bound time) at or above this % of the step fires
  -- (a fifth of the step: timing from such a capture is misleading; light stacks, ~500 frames in a 7 ms
  -- step, stay under)
  min_overhead_pct DOUBLE
)
RETURNS TABLE(
  -- Window start.
  ts TIMESTAMP,
  -- Window width.
  dur DURATION,
  -- Estimated step time added by stack tracing.
  impact_dur DURATION,
  -- Step (or inferred iteration) number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- python_function frames in the step.
  python_frame_count LONG,
  -- Ops carrying a `Call stack` arg in the step (older traces).
  stacked_op_count LONG,
  -- Impact as % of the step.
  overhead_pct DOUBLE,
  -- Launch calls in the step.
  launch_count LONG,
  -- Python frames per launch (NULL without launches).
  frames_per_launch DOUBLE,
  -- Estimated tracing cost before the cap (frames x frame_cost, at most the frames' own time).
  estimate_dur DURATION,
  -- The step's host-bound time the estimate is capped to (NULL: no step-time ledger for the step).
  host_bound_dur DURATION
) AS
WITH
  py AS MATERIALIZED (
    SELECT s.id, s.ts, s.dur FROM slice AS s
    WHERE s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
  ),
  -- Time each frame's direct children (frames or ops) cover, one grouped pass.
  py_children AS MATERIALIZED (
    SELECT c.parent_id AS id, sum(max(c.dur, 0)) AS covered
    FROM slice AS c
    WHERE c.parent_id IN (SELECT id FROM py)
    GROUP BY c.parent_id
  ),
  -- The ledger's windows: ProfilerStep windows, else the inferred iterations, else the capture.
  win AS MATERIALIZED (
    SELECT window_id, step, noun, upid, window_ts AS ts, window_dur AS dur
    FROM kineto_ledger_windows
  ),
  -- The slices that start in each window (any process), by a range scan of the slice table (sorted by ts)
  -- per window: every slice is read once per window that holds it, never once per step.
  frames AS (
    SELECT
      st.window_id,
      count(*) AS n,
      sum(max(max(s.dur, 0) - coalesce(ch.covered, 0), 0)) AS self_dur
    FROM win AS st
    CROSS JOIN slice AS s
    LEFT JOIN py_children AS ch
      ON ch.id = s.id
    WHERE
      st.dur > 0
      AND s.ts >= st.ts
      AND s.ts < st.ts + st.dur
      AND s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
    GROUP BY st.window_id
  ),
  -- Slices holding a Call stack arg (the JSON importer stores no arg for a null value).
  stacked AS (
    SELECT st.window_id, count(*) AS n
    FROM win AS st
    CROSS JOIN slice AS s
    WHERE
      st.dur > 0
      AND s.ts >= st.ts
      AND s.ts < st.ts + st.dur
      AND extract_arg(s.arg_set_id, 'args.Call stack') IS NOT NULL
    GROUP BY st.window_id
  ),
  -- Windows outer (CROSS JOIN), each a binary search on the calls' sorted starts: the planner's own order
  -- looks every call up in the windows of its process, calls x windows.
  launches AS (
    SELECT st.window_id, count(*) AS n
    FROM win AS st
    CROSS JOIN kineto_runtime_calls AS r
      ON r.ts >= st.ts
      AND r.ts < st.ts + st.dur
      AND r.upid = st.upid
    WHERE
      r.class = 'launch'
    GROUP BY st.window_id
  ),
  -- The claimed buckets read once: a table function on the inner side of a join runs again per window.
  claimed AS MATERIALIZED (
    SELECT window_id, device, dur
    FROM kineto_ledger_claim_buckets('idle.host_compute, idle.launch, host.python')
  ),
  -- host-bound time per step (the claim): per lane (device, or the host-only lane), then the lane that
  -- waits most
  host_bound AS (
    SELECT window_id, max(d) AS host_bound_dur
    FROM (
      -- every window of the ledger: one whose lanes hold none of the claim caps to 0
      SELECT w.window_id, c.device, coalesce(sum(c.dur), 0) AS d
      FROM win AS w
      LEFT JOIN claimed AS c
        USING (window_id)
      GROUP BY w.window_id, c.device
    )
    GROUP BY window_id
  ),
  rows AS (
    SELECT
      st.ts,
      st.dur,
      st.step,
      st.noun,
      coalesce(f.n, 0) AS python_frame_count,
      coalesce(k.n, 0) AS stacked_op_count,
      coalesce(f.self_dur, 0) AS frame_self_dur,
      -- The tracer's cost of a frame is recorded inside that frame, outside its children: the frames'
      -- own time bounds the per-frame guess from above.
      min(coalesce(f.n, 0) * $frame_cost, coalesce(f.self_dur, 0)) + coalesce(k.n, 0) * $frame_cost AS raw,
      coalesce(l.n, 0) AS launch_count,
      hb.host_bound_dur
    FROM win AS st
    LEFT JOIN frames AS f
      USING (window_id)
    LEFT JOIN stacked AS k
      USING (window_id)
    LEFT JOIN launches AS l
      USING (window_id)
    LEFT JOIN host_bound AS hb
      USING (window_id)
  ),
  capped AS (
    SELECT r.*, min(r.raw, coalesce(r.host_bound_dur, r.raw)) AS est FROM rows AS r
  )
SELECT
  r.ts,
  r.dur,
  CAST(min(r.est, r.dur) AS INT) AS impact_dur,
  r.step,
  printf(
    '%s %d was captured with Python stacks: %d python frames%s%s, an estimated ~%.3f ms of tracing (%.1f us per frame, at most the frames'' own %.3f ms outside their children)%s: ~%.3f ms, %.1f%% of the %.3f ms %s. Re-profile without with_stack before sizing anything host-bound; use this capture for attribution.',
    r.noun,
    r.step,
    r.python_frame_count,
    CASE WHEN r.stacked_op_count > 0 THEN printf(' and %d ops with Call stack args', r.stacked_op_count) ELSE '' END,
    CASE WHEN r.launch_count > 0 THEN printf(' (%.1f per launch)', 1.0 * r.python_frame_count / r.launch_count) ELSE '' END,
    r.raw / 1e6,
    $frame_cost / 1e3,
    r.frame_self_dur / 1e6,
    CASE
      WHEN r.host_bound_dur IS NOT NULL THEN printf(', of which the %s''s %.3f ms of host-bound time can hold', lower(r.noun), r.host_bound_dur / 1e6)
      ELSE ''
    END,
    r.est / 1e6,
    100.0 * r.est / max(r.dur, 1),
    r.dur / 1e6,
    lower(r.noun)
  ) AS evidence,
  r.python_frame_count,
  r.stacked_op_count,
  100.0 * r.est / max(r.dur, 1) AS overhead_pct,
  r.launch_count,
  CASE WHEN r.launch_count > 0 THEN round(1.0 * r.python_frame_count / r.launch_count, 2) END AS frames_per_launch,
  CAST(r.raw AS INT) AS estimate_dur,
  r.host_bound_dur
FROM capped AS r
WHERE
  r.python_frame_count + r.stacked_op_count > 0
  AND 100.0 * r.est / max(r.dur, 1) >= $min_overhead_pct
ORDER BY r.ts;
