-- id: catalog.gc_gil_stall
-- version: 8
-- kind: detector
-- title: GC / GIL stall: Python garbage collection pausing every thread inside steps
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "GC / GIL stall"
-- what: periodic all-thread gaps with no op and no CUDA API activity on any thread, with Python GC
--   (record_python_gc_info `Python GC` events, gc.collect frames) inside them.
-- confirming: gc events per step and their time; the longest all-thread gap of the step.
-- why: a GC pass stops every Python thread, so the host stops launching and the device drains: the pause is
--   step time (impact_dur is the GC time inside steps).
-- known_problems: a gap without GC evidence stays silent by default (pure-Python bookkeeping leaves the same
--   gap); a GC pass in a step that is device-bound anyway may cost less than its length.
-- example: at_threshold_1
-- use_instead: gc.disable() / gc.freeze() around the training loop (collect between steps or every N steps), fewer
--   cyclic temporaries; move logging and bookkeeping off the training thread.
-- needs: cpu_ops
-- claims: idle.gc, host.gc
-- status: stable
-- catalog_row: major.gc_gil_stall, major.gc_stall
-- default min_gc: 1ms
-- default min_gap: 5ms
-- default gaps_without_gc: FALSE

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.python_gc;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;

-- All-thread gaps of each process: the stretches between its host activity intervals, where a thread
-- is doing framework work (ATen ops and runtime calls of any thread; annotations and python frames
-- excluded). An activity slice inside another one (its parent on the same track) adds nothing to
-- their union, so only the outermost ones are swept: the gap before each is its start minus the
-- latest end of all that started earlier, one sorted pass.
-- `wanted` is a condition on none of the scanned rows (a constant for the call): false, the scan of the
-- host slices stops before its first row and no gap is computed (tested at the scan: SQLite evaluates a
-- constant term once there, but a subquery in FROM with a window is built whole before the outer WHERE
-- runs).
CREATE OR REPLACE PERFETTO MACRO _kineto_catalog_host_gaps(
  -- A constant condition: whether the gaps are needed at all.
  wanted Expr
)
RETURNS TableOrSubquery AS
(
  WITH
    acts AS (
      SELECT h.upid, h.ts, h.dur
      FROM kineto_host_slices AS h
      JOIN kineto_event_categories AS hc
        ON hc.category = h.category
      LEFT JOIN slice AS p
        ON p.id = h.parent_id
      LEFT JOIN kineto_event_categories AS pc
        ON pc.category = p.category
      WHERE
        ($wanted)
        AND (hc.event_class = 'runtime' OR (hc.event_class = 'cpu_op' AND NOT hc.is_annotation))
        AND NOT h.name GLOB 'ProfilerStep#*'
        AND NOT coalesce(
          (pc.event_class = 'runtime' OR (pc.event_class = 'cpu_op' AND NOT pc.is_annotation))
            AND NOT p.name GLOB 'ProfilerStep#*',
          FALSE
        )
    ),
    edges AS (
      SELECT
        upid,
        ts,
        max(ts + dur) OVER (
          PARTITION BY upid
          ORDER BY ts, ts + dur
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS prev_end
      FROM acts
    )
  SELECT upid, prev_end AS ts, ts - prev_end AS dur
  FROM edges
  WHERE
    ts > prev_end
);

-- One row per iteration window (kineto.lib.iterations: ProfilerStep#N, else inferred iterations, else the
-- capture) with GC stalls (or, with gaps_without_gc, long all-thread gaps).
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_gc_gil_stall(
  -- GC time per step that fires.
  min_gc DURATION,
  -- An all-thread gap at least this long is reported (and, with gaps_without_gc, fires on its own)
  min_gap DURATION,
  -- Also fire on gaps with no GC evidence. Off by default: pure-Python work (bookkeeping, tokenization)
  -- leaves the same gap with GC off (the golden fixed twin does)
  gaps_without_gc BOOL
)
RETURNS TABLE(
  -- First GC event (or longest gap) start.
  ts TIMESTAMP,
  -- Its length.
  dur DURATION,
  -- Step time lost: the GC time (or the gap time without GC evidence).
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- GC events in the step.
  gc_count LONG,
  -- Their time.
  gc_dur DURATION,
  -- Longest GC event.
  gc_max_dur DURATION,
  -- All-thread gaps of at least min_gap in the step.
  gap_count LONG,
  -- Longest all-thread gap in the step.
  gap_max_dur DURATION
) AS
WITH
  -- the windows: every iteration window of the ledger, whatever its source
  windows AS (
    SELECT window_id, step, noun, window_dur
    FROM kineto_ledger_claim('idle.gc, host.gc')
  ),
  -- GC passes (kineto.lib.python_gc) with their window
  gc_in_step AS (
    SELECT g.ts, g.dur, w.window_id
    FROM kineto_python_gc AS g
    JOIN kineto_window_of!((SELECT id, upid, ts FROM kineto_python_gc)) AS w
      USING (id)
  ),
  gc_step AS (
    SELECT window_id, count(*) AS n, sum(dur) AS d, max(dur) AS mx, min(ts) AS first_ts
    FROM gc_in_step
    GROUP BY window_id
  ),
  -- The gaps only matter to a step that fires: one with at least min_gc of GC time, or any step with
  -- gaps_without_gc. On a trace without a GC event (most: record_python_gc_info is off by default) and a
  -- positive min_gc none fires, so its gaps, a sorted pass over every host slice, are not computed.
  gaps_numbered AS (
    SELECT row_number() OVER () AS id, g.upid, g.ts, g.dur
    FROM _kineto_catalog_host_gaps!(
      $gaps_without_gc OR $min_gc <= 0 OR EXISTS (SELECT 1 FROM kineto_python_gc)
    ) AS g
  ),
  gap_steps AS (
    SELECT id, window_id FROM kineto_window_of!(gaps_numbered)
  ),
  gaps AS (
    SELECT g.ts, g.dur, gs.window_id
    FROM gaps_numbered AS g
    JOIN gap_steps AS gs
      USING (id)
  ),
  gap_step AS (
    SELECT
      window_id,
      sum(dur >= $min_gap) AS n,
      max(dur) AS mx,
      sum(CASE WHEN dur >= $min_gap THEN dur ELSE 0 END) AS total
    FROM gaps
    GROUP BY window_id
  ),
  gap_first AS (
    SELECT window_id, ts, dur, row_number() OVER (PARTITION BY window_id ORDER BY dur DESC) AS rn
    FROM gaps
  ),
  rows AS (
    SELECT
      st.window_id,
      st.step,
      st.noun,
      st.window_dur AS step_dur,
      coalesce(g.n, 0) AS gc_count,
      coalesce(g.d, 0) AS gc_dur,
      g.mx AS gc_max_dur,
      g.first_ts,
      coalesce(p.n, 0) AS gap_count,
      p.mx AS gap_max_dur,
      p.total AS gap_total,
      f.ts AS gap_ts
    FROM windows AS st
    LEFT JOIN gc_step AS g
      USING (window_id)
    LEFT JOIN gap_step AS p
      USING (window_id)
    LEFT JOIN gap_first AS f
      ON f.window_id = st.window_id
      AND f.rn = 1
  )
SELECT
  coalesce(CASE WHEN r.gc_count > 0 THEN r.first_ts END, r.gap_ts) AS ts,
  CASE WHEN r.gc_count > 0 THEN r.gc_max_dur ELSE r.gap_max_dur END AS dur,
  CASE WHEN r.gc_dur >= $min_gc THEN r.gc_dur ELSE coalesce(r.gap_total, 0) END AS impact_dur,
  r.step,
  CASE
    WHEN r.gc_dur >= $min_gc THEN printf(
      '%s %d: %d Python GC pauses, %.3f ms (%.1f%% of the %s, longest %.3f ms); longest all-thread gap with no op or CUDA API activity %.3f ms.',
      r.noun,
      r.step,
      r.gc_count,
      r.gc_dur / 1e6,
      100.0 * r.gc_dur / max(r.step_dur, 1),
      lower(r.noun),
      r.gc_max_dur / 1e6,
      coalesce(r.gap_max_dur, 0) / 1e6
    )
    ELSE printf(
      '%s %d: %d all-thread gaps of at least %.1f ms with no op or CUDA API activity (longest %.3f ms) and no GC events recorded: GC or GIL contention is one candidate; record_python_gc_info=True or py-spy confirms.',
      r.noun,
      r.step,
      r.gap_count,
      $min_gap / 1e6,
      coalesce(r.gap_max_dur, 0) / 1e6
    )
  END AS evidence,
  r.gc_count,
  r.gc_dur,
  r.gc_max_dur,
  r.gap_count,
  r.gap_max_dur
FROM rows AS r
WHERE
  r.gc_dur >= $min_gc
  OR ($gaps_without_gc AND r.gap_count > 0)
ORDER BY r.window_id;
