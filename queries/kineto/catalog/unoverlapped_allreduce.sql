-- id: catalog.unoverlapped_allreduce
-- version: 3
-- kind: detector
-- title: Unoverlapped DDP all-reduce (deprecated: see catalog.exposed_communication): gradient collectives serialized after the backward pass
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Unoverlapped DDP
--   all-reduce"
-- what: nccl:all_reduce (RCCL, gloo:all_reduce on CPU) work serialized after the last backward
--   op/kernel of the step instead of running under it. Read per window of the step-time ledger
--   (ProfilerStep#N, else the inferred iterations, else the capture): a loop without a profiler schedule
--   is read per iteration.
-- confirming: overlap % of the collective time with backward compute near 0 (HTA comm-comp overlap for
--   the tail buckets); share of the collective time that starts after backward ended.
-- why: gradient all-reduce that starts after backward adds its whole duration to the step; overlapped under
--   backward (DDP buckets) it costs almost nothing. impact_dur is the collective time not under backward.
--   Deprecated: catalog.exposed_communication claims the exposed time of every collective (all_to_all,
--   all_gather, reduce_scatter, send/recv, gloo too) from the step ledger; diagnose no longer runs this rule.
-- known_problems: a single-bucket model (all gradients ready at the end); gradient accumulation steps that
--   skip the sync; find_unused_parameters delaying buckets on purpose.
-- example: after_backward
-- use_instead: check gradient_as_bucket_view, bucket_cap_mb, static_graph, a stray no_sync() or a manual
--   all_reduce after loss.backward(); let DDP's autograd hooks reduce buckets during backward.
-- needs: cpu_ops
-- status: deprecated
-- default max_overlap_pct: 10
-- default min_collective_pct: 1

INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.collectives;
INCLUDE PERFETTO MODULE kineto.lib.backward_windows;
INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
INCLUDE PERFETTO MODULE intervals.intersect;

-- Compute-kernel busy intervals per device (merged), the "backward compute" of GPU traces.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_compute_busy(
  -- Device.
  device LONG,
  -- Start.
  ts TIMESTAMP,
  -- Length.
  dur DURATION
) AS
SELECT device, ts, dur
FROM kineto_interval_merge!((SELECT device, ts, dur FROM kineto_kernels WHERE class = 'compute'), (device));

-- Communication-kernel busy intervals per device (merged), with the window (kineto_iterations) of their
-- first kernel's launch.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_comm_busy(
  -- Interval id.
  id LONG,
  -- Device.
  device LONG,
  -- Start.
  ts TIMESTAMP,
  -- Length.
  dur DURATION,
  -- Window of the earliest kernel's launch.
  window_id LONG,
  -- Kernels merged.
  kernel_count LONG
) AS
WITH
  launched AS (
    SELECT c.id, c.device, c.ts, c.dur, l.id AS launch_id, l.upid, l.ts AS launch_ts
    FROM kineto_collectives AS c
    JOIN kineto_kernels AS k
      USING (id)
    JOIN kineto_launches AS l
      ON l.correlation = k.correlation
    WHERE
      c.source = 'kernel'
  ),
  windowed AS (
    SELECT l.device, l.ts, l.dur, w.window_id
    FROM launched AS l
    JOIN kineto_window_of!((SELECT launch_id AS id, upid, launch_ts AS ts FROM launched)) AS w
      ON w.id = l.launch_id
  )
SELECT
  row_number() OVER (ORDER BY device, min(ts)) AS id,
  device,
  min(ts) AS ts,
  max(_merge_end_ts) - min(ts) AS dur,
  min(window_id) AS window_id,
  count(*) AS kernel_count
FROM _kineto_interval_merge_rows!((SELECT device, ts, dur, window_id FROM windowed), (device))
GROUP BY device, merge_group;

-- Overlap of each merged communication interval with merged compute.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_comm_overlap(
  -- _kineto_catalog_comm_busy id.
  id LONG,
  -- Time overlapped by compute kernels.
  overlap_dur DURATION
) AS
WITH
  compute AS (
    SELECT row_number() OVER (ORDER BY device, ts) AS id, ts, dur, device FROM _kineto_catalog_compute_busy
  ),
  comm AS (
    SELECT id, ts, dur, device FROM _kineto_catalog_comm_busy
  ),
  pieces AS (
    SELECT id_0, dur FROM _interval_intersect!((comm, compute), (device))
  )
SELECT c.id, coalesce((SELECT sum(p.dur) FROM pieces AS p WHERE p.id_0 = c.id), 0) AS overlap_dur
FROM comm AS c;

-- One row per training window (it has a backward pass) whose collectives barely overlap backward.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_unoverlapped_allreduce(
  -- The step fires when at most this % of its collective time overlaps backward compute (seed: overlap % ~ 0)
  max_overlap_pct DOUBLE,
  -- Collective time under this % of the step is too small to matter.
  min_collective_pct DOUBLE
)
RETURNS TABLE(
  -- First collective start in the step.
  ts TIMESTAMP,
  -- From the first collective start to the end of the last.
  dur DURATION,
  -- Step time lost: the collective time not overlapped.
  impact_dur DURATION,
  -- Step number (N of ProfilerStep#N, else the iteration's).
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- `kernel` (GPU communication kernels) or `cpu` (gloo / synchronous collective ops).
  source STRING,
  -- Collective pieces in the step.
  collective_count LONG,
  -- Summed collective time.
  collective_dur DURATION,
  -- % of the collective time overlapping backward compute.
  overlap_pct DOUBLE,
  -- % of the collective time that starts after the backward pass ended.
  after_backward_pct DOUBLE,
  -- Backward pass length.
  backward_dur DURATION
) AS
WITH
  compute_launches AS (
    SELECT l.ts, l.gpu_end_ts
    FROM kineto_launches AS l
    WHERE
      l.gpu_first_id IN (SELECT id FROM kineto_kernels WHERE class = 'compute')
  ),
  bwd_gpu AS (
    SELECT b.window_id, max(l.gpu_end_ts) AS bwd_gpu_end
    FROM kineto_backward_windows AS b
    JOIN compute_launches AS l
      ON l.ts >= b.ts
      AND l.ts < b.ts + b.dur
    GROUP BY b.window_id
  ),
  cpu_work AS (
    SELECT c.id, t.upid, c.ts, c.dur
    FROM kineto_collectives AS c
    JOIN kineto_thread_track_slices AS t
      USING (id)
    WHERE
      c.source = 'cpu'
  ),
  pieces AS (
    SELECT c.window_id, 'kernel' AS source, c.ts, c.dur, c.kernel_count AS n, o.overlap_dur
    FROM _kineto_catalog_comm_busy AS c
    JOIN _kineto_catalog_comm_overlap AS o
      USING (id)
    UNION ALL
    SELECT w.window_id, 'cpu' AS source, c.ts, c.dur, 1 AS n, 0 AS overlap_dur
    FROM cpu_work AS c
    JOIN kineto_window_of!((SELECT id, upid, ts FROM cpu_work)) AS w
      USING (id)
  ),
  work AS (
    SELECT w.*, b.ts AS bwd_ts, b.ts + b.dur AS bwd_end, g.bwd_gpu_end
    FROM pieces AS w
    JOIN kineto_backward_windows AS b
      USING (window_id)
    LEFT JOIN bwd_gpu AS g
      USING (window_id)
  ),
  per_piece AS (
    SELECT
      w.*,
      CASE
        WHEN w.source = 'kernel' THEN w.overlap_dur
        ELSE max(0, min(w.ts + w.dur, w.bwd_end) - max(w.ts, w.bwd_ts))
      END AS overlap_dur2,
      CASE
        WHEN w.source = 'kernel' THEN w.ts >= coalesce(w.bwd_gpu_end, w.bwd_end)
        ELSE w.ts >= w.bwd_end
      END AS after_bwd
    FROM work AS w
  ),
  per_step AS (
    SELECT
      window_id,
      max(source) AS source,
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS span,
      sum(n) AS collective_count,
      sum(dur) AS collective_dur,
      sum(overlap_dur2) AS overlap_dur,
      sum(CASE WHEN after_bwd THEN dur ELSE 0 END) AS after_dur,
      max(bwd_end) - min(bwd_ts) AS backward_dur
    FROM per_piece
    GROUP BY window_id
  )
SELECT
  p.ts,
  p.span AS dur,
  max(p.collective_dur - p.overlap_dur, 0) AS impact_dur,
  st.step,
  printf(
    '%s %d: %d collective %s (%.3f ms) overlap backward compute only %.1f%%; %.1f%% of that time starts after the last backward op/kernel ended (%.3f ms backward).',
    CASE WHEN st.source = 'profiler_step' THEN 'Step' ELSE 'Iteration' END,
    st.step,
    p.collective_count,
    CASE WHEN p.source = 'kernel' THEN 'kernels' ELSE 'ops' END,
    p.collective_dur / 1e6,
    100.0 * p.overlap_dur / max(p.collective_dur, 1),
    100.0 * p.after_dur / max(p.collective_dur, 1),
    p.backward_dur / 1e6
  ) AS evidence,
  p.source,
  p.collective_count,
  p.collective_dur,
  100.0 * p.overlap_dur / max(p.collective_dur, 1) AS overlap_pct,
  100.0 * p.after_dur / max(p.collective_dur, 1) AS after_backward_pct,
  p.backward_dur
FROM per_step AS p
JOIN kineto_iterations AS st
  ON st.id = p.window_id
WHERE
  100.0 * p.overlap_dur / max(p.collective_dur, 1) <= $max_overlap_pct
  AND 100.0 * p.collective_dur / max(st.dur, 1) >= $min_collective_pct
ORDER BY p.ts;
