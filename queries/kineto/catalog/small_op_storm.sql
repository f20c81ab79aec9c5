-- id: catalog.small_op_storm
-- version: 15
-- kind: detector
-- title: Launch-bound step (eager small-op storm): the device runs dry between tiny kernels the host issues one by one
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Eager small-op storm"
-- what: short device idle gaps between short kernels that start within tens of us of their launch:
--   the queue is empty and the host issues work no faster than the device finishes it (hundreds of
--   sub-50 us ATen ops per step; the CPU op row denser than the GPU row).
-- confirming: the ledger's launch-bound idle (device idle while the host issues launches) as a share of the
--   step; the median launch-to-start delay of the kernels that end a device idle gap (an empty queue: tens
--   of us; a full queue: ms); the median kernel time and the fraction under 10 us.
-- why: each tiny op costs host dispatch and a launch (several us) for a kernel that runs for less: the host,
--   not the device, sets the pace and the device idles between kernels. impact_dur is the ledger's
--   idle.launch (reading.step_ledger): device idle while the host is in a launch, in an op with a launch
--   beneath it, in a compiled region's wrapper between its launches (torch.compile's Torch-Compiled
--   Region, AOTAutograd's CompiledFunction: CUDA graphs remove that issue time), or in a whole-device gap
--   under 100 us. No op-count floor: a small model at 10% GPU busy has few ops and
--   is launch-bound all the same. CPU-only captures have no queue to read: there impact_dur is the small
--   ops' self time (claimed from host.ops), read per steady iteration window, inferred ones included (a
--   serving loop's requests, marked by one record_function each, are its iterations). The Python between
--   the ops is not counted: on a shared machine a multi-ms stall lands in it (or in one op) at random, so
--   it does not measure the per-op issue cost. For the same reason the share gate (min_cpu_self_pct) is
--   taken of the typical window, not of a window a stall stretched: where 3 or more steady windows of a
--   process run the same number of top-level ATen ops (the same code path), each window is read as a
--   sequence of slots (the time each top-level op moves the host's frontier, with the gap before it),
--   the typical window is the sum of the per-position medians across those windows plus the median
--   tail, and a window is judged against the smaller of its own width and that. Work that recurs at the
--   same place in every window (a Python loop, a data step) is in every median and stays; a stall that
--   hits one window at one place is not. Fewer than 3 such windows: the window's own width.
-- known_problems: a full queue is the opposite of launch-bound (the host is ahead; launch calls then block
--   and look long): the launch-to-start delay must be short (max_queue); long kernels let the host get
--   ahead (max_kernel). The queue is judged where the device idles, by the kernel that ends each whole-
--   device idle gap, not over the whole step: a step whose autograd thread keeps the queue full while
--   the forward thread starves it has a long median delay over all its kernels, yet every gap ends with a
--   kernel that started microseconds after its launch, and that part of the step is launch-bound (PyTorch
--   docs, "CUDA semantics", asynchronous execution: the device runs ahead only while work is queued). A CPU-only trainer of a small model fires because its many small ops are
--   genuine CPU work, not launch overhead.
-- example: at_threshold_1
-- use_instead: torch.compile (fusion), CUDA graphs for a fixed-shape step, fused optimizers and fused
--   norms/activations, larger per-op work (batch or fuse small tensors). Where most of a window's launches
--   come from code torch.compile already compiled (inside a compiled region's wrapper,
--   kineto.lib.compiled_wrappers), the row's fix leads with CUDA graphs (torch.compile mode=
--   "reduce-overhead"): fusion has been done, the wrapper's issue time is what is left.
-- needs: none
-- claims: idle.launch, host.ops
-- status: stable
-- catalog_row: major.eager_small_op_storm
-- default max_op: 50us
-- default min_small_ops: 1000
-- default min_cpu_self_pct: 10
-- default min_launch_pct: 10
-- default max_queue: 100us
-- default max_kernel: 50us

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.host_tree;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;
INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;
INCLUDE PERFETTO MODULE kineto.lib.gpu_idle;
INCLUDE PERFETTO MODULE kineto.lib.compiled_wrappers;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;

-- Launch calls placed in their iteration window once (kineto.lib.window_of): the queue below and the
-- launch time per window read it.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_small_op_storm_launches(
  -- Runtime call id.
  id LONG,
  -- Correlation id (NULL when the call carries none).
  correlation LONG,
  -- Call start.
  ts TIMESTAMP,
  -- Call duration.
  dur DURATION,
  -- Window id.
  window_id LONG,
  -- The window is the cold first iteration.
  is_cold BOOL,
  -- The call runs inside a compiled region's wrapper (kineto_compiled_wrappers) on its thread.
  in_compiled BOOL
) AS
WITH
  launches AS (
    SELECT r.id, r.upid, r.utid, r.ts, r.dur, r.correlation
    FROM kineto_runtime_calls AS r
    WHERE
      r.class = 'launch'
  ),
  -- inside a wrapper: one sorted pass per thread; the latest end of the wrappers started at or before a
  -- call is after the call's start exactly when one of them holds it
  wrapped AS (
    SELECT id, in_end > ts AS in_compiled
    FROM (
      SELECT u.*, max(u.w_end) OVER (PARTITION BY u.utid ORDER BY u.ts, u.is_call ROWS UNBOUNDED PRECEDING) AS in_end
      FROM (
        SELECT t.utid, t.ts, t.ts + t.dur AS w_end, 0 AS is_call, NULL AS id
        FROM kineto_compiled_wrappers AS c
        JOIN kineto_thread_track_slices AS t
          USING (id)
        UNION ALL
        -- without a wrapper no call is inside one: the sort is skipped (most captures)
        SELECT utid, ts, NULL, 1, id FROM launches
        WHERE
          EXISTS (SELECT 1 FROM kineto_compiled_wrappers)
      ) AS u
    )
    WHERE
      is_call = 1
  )
SELECT l.id, l.correlation, l.ts, l.dur, w.window_id, w.is_cold, coalesce(c.in_compiled, FALSE) AS in_compiled
FROM launches AS l
JOIN kineto_window_of!(launches) AS w
  USING (id)
LEFT JOIN wrapped AS c
  USING (id);

-- Launch calls with their window and the first kernel they started: one sorted pass by correlation.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_small_op_storm_queue(
  -- Window id of the launch.
  window_id LONG,
  -- Launch call start.
  launch_ts TIMESTAMP,
  -- Kernel start.
  kernel_ts TIMESTAMP,
  -- Kernel duration.
  kernel_dur DURATION,
  -- Device of the kernel.
  kernel_device LONG,
  -- The first kernel of its launch (a graph launch starts many).
  is_first BOOL
) AS
WITH
  placed AS (
    SELECT l.correlation, l.ts, l.window_id
    FROM _kineto_catalog_small_op_storm_launches AS l
    WHERE
      l.correlation IS NOT NULL
      AND NOT l.is_cold
  ),
  joined AS (
    SELECT
      u.*,
      -- One sort: a correlation's launch rows come before its kernels, so the running max at a kernel
      -- row is the max over all of them.
      max(u.w) OVER c AS window_id,
      max(u.lts) OVER c AS launch_ts,
      max(u.kdev) OVER c AS kernel_device,
      row_number() OVER c AS rn
    FROM (
      SELECT correlation, window_id AS w, ts AS lts, NULL AS kts, NULL AS kdur, NULL AS kdev, 0 AS is_kernel
      FROM placed
      UNION ALL
      SELECT correlation, NULL, NULL, ts, dur, device, 1
      FROM kineto_kernels
      WHERE
        kind = 'kernel'
        AND correlation IS NOT NULL
    ) AS u
    WINDOW c AS (PARTITION BY u.correlation ORDER BY u.is_kernel, u.kts ROWS UNBOUNDED PRECEDING)
  )
SELECT window_id, launch_ts, kts AS kernel_ts, kdur AS kernel_dur, kdev AS kernel_device, rn = 2 AS is_first
FROM joined
WHERE
  is_kernel = 1
  AND window_id IS NOT NULL;

-- One row per launch-bound steady iteration (device traces) or small-op storm step (CPU-only).
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_small_op_storm(
  -- An ATen op shorter than this is small (seed: sub-50 us).
  max_op DURATION,
  -- CPU-only captures: a step fires with at least this many small ops, nested ATen calls included (the
  -- golden eager storm has 1391 vs 25 compiled; plain small-MLP training steps 350-650).
  min_small_ops LONG,
  -- CPU-only captures: the small ops' self time must be at least this % of the iteration, of its typical
  -- width where 3 or more windows run the same top-level ops (golden eager storm 25-43 %; a CPU trainer
  -- whose step is dominated by big ops stays silent).
  min_cpu_self_pct DOUBLE,
  -- Device traces: the ledger's launch-bound idle must be at least this % of the iteration (below it,
  -- launch overhead is a detail, not the step's problem).
  min_launch_pct DOUBLE,
  -- Device traces: the median delay from a launch call to its kernel's start, over the kernels that end
  -- a whole-device idle gap, must be at most this. An empty queue starts a kernel 5-50 us after its
  -- launch; a queue the host keeps full makes it ms.
  max_queue DURATION,
  -- Device traces: the median kernel must be shorter than this, the cost of one op's eager issue
  -- path (Python + dispatch + launch, 10-50 us): longer kernels let the host get ahead.
  max_kernel DURATION
)
RETURNS TABLE(
  -- Step start.
  ts TIMESTAMP,
  -- Step width.
  dur DURATION,
  -- Step time claimed: the ledger's idle.launch (device traces), else the small ops' summed self time.
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- ATen ops (not annotations) in the step.
  op_count LONG,
  -- Of them shorter than max_op.
  small_op_count LONG,
  -- Summed self time of the small ops.
  small_op_self_dur DURATION,
  -- Kernels launched from the step (NULL without GPU work).
  kernel_count LONG,
  -- Median kernel duration (NULL without GPU work).
  median_kernel_dur DURATION,
  -- Fraction of kernels under 10 us (NULL without GPU work).
  under_10us_fraction DOUBLE,
  -- Host time in launch calls during the step.
  launch_dur DURATION,
  -- Device busy time inside the step window (NULL without GPU work).
  gpu_busy_dur DURATION,
  -- Median delay from a launch call to the start of a kernel that ends a whole-device idle gap (NULL
  -- without GPU work or without such a kernel).
  median_queue_dur DURATION,
  -- Median delay from a launch call to its kernel's start over every first kernel of a launch.
  median_all_queue_dur DURATION,
  -- The fix for this window when most of its launches come from compiled code (CUDA graphs), else NULL
  -- (the header's).
  fix STRING
) AS
WITH
  has_gpu AS (
    SELECT EXISTS (SELECT 1 FROM kineto_kernels) AS yes
  ),
  -- device traces: per steady window, the ledger's claim (idle.launch: a device lane holds no host.ops)
  ledger AS (
    SELECT
      l.window_id,
      l.step,
      l.window_ts AS ts,
      l.window_dur AS dur,
      l.lanes,
      l.claim_dur AS launch_idle,
      w.busy_dur AS busy,
      l.source
    FROM kineto_ledger_claim('idle.launch, host.ops') AS l
    JOIN kineto_ledger_windows AS w
      USING (window_id)
    WHERE
      NOT l.is_cold
      AND l.has_device
  ),
  -- kernels that end a whole-device idle gap: where the device waited, the delay says whether work was
  -- queued. Materialized with a typed end (CAST): SQLite builds its automatic index on (device, end_ts)
  -- for the join below only when the column has an affinity; on the bare sum it indexes device alone and
  -- scans every gap of the device per kernel.
  gap_ends AS MATERIALIZED (
    SELECT DISTINCT device, CAST(ts + dur AS INT) AS end_ts
    FROM kineto_gpu_idle
    WHERE
      stream IS NULL
      AND dur > 0
  ),
  queue_ranked AS MATERIALIZED (
    SELECT
      q.window_id,
      q.kernel_dur,
      q.kernel_ts - q.launch_ts AS delay,
      q.is_first,
      g.end_ts IS NOT NULL AS ends_gap,
      -- one sort per window for both (the count's frame is the whole partition)
      row_number() OVER by_dur AS k_rn,
      count(*) OVER (by_dur ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS k_n
    FROM _kineto_catalog_small_op_storm_queue AS q
    LEFT JOIN gap_ends AS g
      ON g.device = q.kernel_device
      AND g.end_ts = q.kernel_ts
    WINDOW by_dur AS (PARTITION BY q.window_id ORDER BY q.kernel_dur)
  ),
  -- first kernels of a launch ranked by delay in one sort: the row number over all of them, and the
  -- running count of gap-ending ones, which at a gap-ending row is its rank among those (their delays
  -- come in the same order)
  delay_ranked AS (
    SELECT
      window_id,
      delay,
      ends_gap,
      row_number() OVER by_delay AS d_rn,
      sum(ends_gap) OVER by_delay AS g_rn
    FROM queue_ranked
    WHERE
      is_first
    WINDOW by_delay AS (PARTITION BY window_id ORDER BY delay ROWS UNBOUNDED PRECEDING)
  ),
  delay_n AS (
    SELECT window_id, count(*) AS d_n, sum(ends_gap) AS g_n
    FROM queue_ranked
    WHERE
      is_first
    GROUP BY window_id
  ),
  -- one pass for every window's medians (a subquery per window would rank the delays again each time)
  delay_median AS (
    SELECT
      window_id,
      avg(CASE WHEN ends_gap AND g_rn IN ((g_n + 1) / 2, (g_n + 2) / 2) THEN delay END) AS median_queue_dur,
      avg(CASE WHEN d_rn IN ((d_n + 1) / 2, (d_n + 2) / 2) THEN delay END) AS median_all_queue_dur
    FROM delay_ranked
    JOIN delay_n
      USING (window_id)
    GROUP BY window_id
  ),
  queue AS (
    SELECT
      q.window_id,
      max(q.k_n) AS kernel_count,
      avg(CASE WHEN q.k_rn IN ((q.k_n + 1) / 2, (q.k_n + 2) / 2) THEN q.kernel_dur END) AS median_kernel_dur,
      avg(q.kernel_dur < 10000) AS under_10us_fraction,
      max(dm.median_queue_dur) AS median_queue_dur,
      max(dm.median_all_queue_dur) AS median_all_queue_dur
    FROM queue_ranked AS q
    LEFT JOIN delay_median AS dm
      USING (window_id)
    GROUP BY q.window_id
  ),
  launch_time AS (
    SELECT l.window_id, sum(l.dur) AS launch_dur, count(*) AS launch_count, sum(l.in_compiled) AS compiled_count
    FROM _kineto_catalog_small_op_storm_launches AS l
    GROUP BY l.window_id
  ),
  device_rows AS (
    SELECT
      l.ts,
      l.dur,
      l.launch_idle AS impact_dur,
      l.step,
      printf(
        '%s %d: the GPU sits idle %.3f ms (%.1f%% of the %.3f ms %s) while the host issues launches; %d kernels, median %.1f us (%.0f%% under 10 us); the kernels that end an idle gap start a median %.1f us after their launch (an empty queue; %.1f us over all kernels); launch calls %.3f ms.',
        CASE WHEN l.source = 'profiler_step' THEN 'Step' ELSE 'Iteration' END,
        l.step,
        l.launch_idle / 1e6,
        100.0 * l.launch_idle / (l.dur * l.lanes),
        l.dur / 1e6,
        CASE WHEN l.source = 'profiler_step' THEN 'step' ELSE 'iteration' END,
        q.kernel_count,
        q.median_kernel_dur / 1e3,
        100.0 * q.under_10us_fraction,
        q.median_queue_dur / 1e3,
        q.median_all_queue_dur / 1e3,
        coalesce(lt.launch_dur, 0) / 1e6
      ) AS evidence,
      NULL AS op_count,
      NULL AS small_op_count,
      NULL AS small_op_self_dur,
      q.kernel_count,
      CAST(q.median_kernel_dur AS INT) AS median_kernel_dur,
      q.under_10us_fraction,
      coalesce(lt.launch_dur, 0) AS launch_dur,
      l.busy AS gpu_busy_dur,
      CAST(q.median_queue_dur AS INT) AS median_queue_dur,
      CAST(q.median_all_queue_dur AS INT) AS median_all_queue_dur,
      CASE
        WHEN 2 * coalesce(lt.compiled_count, 0) > coalesce(lt.launch_count, 0) THEN printf(
          '%d of the %d launches are issued from code torch.compile already compiled: fusion is done, what is left is the compiled wrapper issuing its kernels one by one. Capture the region in CUDA graphs (torch.compile(mode="reduce-overhead"); PyTorch docs, "torch.compile" and "CUDA Graphs" in "CUDA semantics"), which replays it with one launch; for shapes that vary, pad them to a few buckets so the graphs can be reused.',
          lt.compiled_count,
          lt.launch_count
        )
      END AS fix
    FROM ledger AS l
    JOIN queue AS q
      USING (window_id)
    LEFT JOIN launch_time AS lt
      USING (window_id)
    WHERE
      100.0 * l.launch_idle / (l.dur * l.lanes) >= $min_launch_pct
      AND q.median_queue_dur <= $max_queue
      AND q.median_kernel_dur < $max_kernel
  ),
  -- CPU-only captures: ATen ops (not annotations) placed in their iteration window once
  -- (kineto.lib.window_of). The ops are read from the shared host tables (what kineto_cpu_ops is made of),
  -- so a device trace, where this branch is empty, never builds the op table for it.
  cpu_ops AS (
    SELECT h.id, h.upid, h.ts, h.dur, max(t.self_dur, 0) AS self_dur, t.parent_id
    -- has_gpu outermost: on a device trace the check fails once, before any slice is read
    FROM has_gpu AS g
    CROSS JOIN kineto_host_slices AS h
    CROSS JOIN kineto_host_tree AS t
      ON t.id = h.id
    WHERE
      NOT g.yes
      AND h.event_class = 'cpu_op'
      AND NOT _kineto_is_host_annotation!(h.category, h.name)
  ),
  placed_ops AS MATERIALIZED (
    SELECT o.id, o.ts, o.dur, o.self_dur, o.parent_id, w.window_id
    FROM cpu_ops AS o
    JOIN kineto_window_of!(cpu_ops) AS w
      USING (id)
    WHERE
      NOT w.is_cold
  ),
  ops AS (
    SELECT
      window_id,
      count(*) AS op_count,
      sum(dur < $max_op) AS small_op_count,
      sum(CASE WHEN dur < $max_op THEN self_dur ELSE 0 END) AS small_op_self_dur
    FROM placed_ops
    GROUP BY window_id
  ),
  -- top-level ATen ops (no ATen op above them), in order, with the host frontier before each
  top AS (
    SELECT
      p.window_id,
      p.id,
      p.ts + p.dur AS end_ts,
      row_number() OVER by_ts AS k,
      max(l.window_ts, coalesce(max(p.ts + p.dur) OVER (by_ts ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), l.window_ts)) AS frontier
    FROM placed_ops AS p
    JOIN kineto_ledger_windows AS l
      USING (window_id)
    WHERE
      NOT l.has_device
      AND (p.parent_id IS NULL OR p.parent_id NOT IN (SELECT id FROM cpu_ops))
    WINDOW
      by_ts AS (PARTITION BY p.window_id ORDER BY p.ts, p.id)
  ),
  -- windows compared position by position: same process, same number of top-level ops
  shape AS (
    SELECT
      l.window_id,
      l.upid,
      count(t.id) AS top_count,
      l.window_ts + l.window_dur - max(coalesce(max(t.end_ts), l.window_ts), l.window_ts) AS tail_dur
    FROM kineto_ledger_windows AS l
    JOIN top AS t
      USING (window_id)
    GROUP BY l.window_id
  ),
  slot AS (
    SELECT
      s.upid,
      s.top_count,
      t.k,
      max(t.end_ts, t.frontier) - t.frontier AS slot_dur
    FROM top AS t
    JOIN shape AS s
      USING (window_id)
    UNION ALL
    -- the tail after the last top-level op is one more position
    SELECT upid, top_count, top_count + 1 AS k, tail_dur AS slot_dur
    FROM shape
  ),
  slot_ranked AS (
    SELECT
      upid,
      top_count,
      k,
      slot_dur,
      row_number() OVER (PARTITION BY upid, top_count, k ORDER BY slot_dur) AS rn,
      count(*) OVER (PARTITION BY upid, top_count, k) AS n
    FROM slot
  ),
  typical AS (
    SELECT upid, top_count, max(n) AS window_count, sum(median_dur) AS typical_dur
    FROM (
      SELECT upid, top_count, k, max(n) AS n, avg(CASE WHEN rn IN ((n + 1) / 2, (n + 2) / 2) THEN slot_dur END) AS median_dur
      FROM slot_ranked
      GROUP BY upid, top_count, k
    )
    GROUP BY upid, top_count
  ),
  judged_dur AS (
    SELECT
      s.window_id,
      CASE WHEN ty.window_count >= 3 THEN cast(round(ty.typical_dur) AS INT) END AS typical_dur,
      ty.window_count
    FROM shape AS s
    JOIN typical AS ty
      USING (upid, top_count)
  ),
  -- per steady host-only window of the ledger
  host_cost AS (
    SELECT
      l.window_id,
      l.step,
      l.noun,
      l.window_ts AS ts,
      l.window_dur AS dur,
      o.op_count,
      o.small_op_count,
      o.small_op_self_dur,
      min(l.window_dur, coalesce(j.typical_dur, l.window_dur)) AS judged_dur,
      j.window_count
    FROM kineto_ledger_windows AS l
    JOIN ops AS o
      USING (window_id)
    LEFT JOIN judged_dur AS j
      USING (window_id)
    WHERE
      NOT l.is_cold
      AND NOT l.has_device
  ),
  host_rows AS (
    SELECT
      c.ts,
      c.dur,
      c.small_op_self_dur AS impact_dur,
      c.step,
      printf(
        '%s %d runs %d ATen ops, %d of them under %.0f us (%.3f ms of small-op self time in a %.3f ms %s%s; CPU-only capture).',
        c.noun,
        c.step,
        c.op_count,
        c.small_op_count,
        $max_op / 1e3,
        c.small_op_self_dur / 1e6,
        c.dur / 1e6,
        lower(c.noun),
        CASE
          WHEN c.judged_dur < c.dur THEN printf(
            ', %.3f ms in the typical %s: the median of each position over the %d %ss that run the same top-level ops; the other %.3f ms, such as a stall, is not shared by the others',
            c.judged_dur / 1e6,
            lower(c.noun),
            c.window_count,
            lower(c.noun),
            (c.dur - c.judged_dur) / 1e6
          )
          ELSE ''
        END
      ) AS evidence,
      c.op_count,
      c.small_op_count,
      c.small_op_self_dur,
      NULL AS kernel_count,
      NULL AS median_kernel_dur,
      NULL AS under_10us_fraction,
      0 AS launch_dur,
      NULL AS gpu_busy_dur,
      NULL AS median_queue_dur,
      NULL AS median_all_queue_dur,
      NULL AS fix
    FROM host_cost AS c
    WHERE
      c.small_op_count >= $min_small_ops
      AND 100.0 * c.small_op_self_dur >= $min_cpu_self_pct * max(c.judged_dur, 1)
  )
SELECT
  ts, dur, impact_dur, step, evidence, op_count, small_op_count, small_op_self_dur, kernel_count,
  median_kernel_dur, under_10us_fraction, launch_dur, gpu_busy_dur, median_queue_dur, median_all_queue_dur, fix
FROM device_rows
UNION ALL
SELECT
  ts, dur, impact_dur, step, evidence, op_count, small_op_count, small_op_self_dur, kernel_count,
  median_kernel_dur, under_10us_fraction, launch_dur, gpu_busy_dur, median_queue_dur, median_all_queue_dur, fix
FROM host_rows
ORDER BY ts;
