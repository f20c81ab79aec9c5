-- version: 3
-- locked: 3 8c1601acf5979b35
-- lib: lib.collectives@1 lib.cpu_ops@3 lib.dataloader@3 lib.device_busy@2 lib.event_categories@2
--   lib.gpu_idle@1 lib.host_slices@2 lib.host_tree@2 lib.internal_reads@1 lib.interval_merge@2
--   lib.iterations@1 lib.kernel_classes@1 lib.kernels@2 lib.launches@4 lib.runtime_calls@3 lib.steps@3
--   lib.stream_busy@2

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.kernel_classes;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.dataloader;
INCLUDE PERFETTO MODULE kineto.lib.collectives;
INCLUDE PERFETTO MODULE kineto.lib.gpu_idle;
INCLUDE PERFETTO MODULE kineto.lib.internal_reads;

-- Ledger lanes: one per device (with the host process that launched its work), or, on a capture
-- without device activity, one host-only lane per process with windows.
CREATE OR REPLACE PERFETTO TABLE _kineto_ledger_lanes(
  -- Lane key: the device index, or -1 - upid for a host-only lane.
  lane LONG,
  -- Device index, NULL for a host-only lane.
  device LONG,
  -- Host process of the lane.
  upid LONG
) AS
WITH
  main_process AS (
    SELECT upid
    FROM kineto_host_slices
    WHERE
      upid IS NOT NULL
      AND dur > 0
    GROUP BY upid
    ORDER BY count(*) DESC, upid
    LIMIT 1
  ),
  -- device -> host process, by the launches of its work (calls and activities meet by correlation in
  -- one sorted pass)
  corr AS (
    SELECT
      device,
      max(call_upid) OVER (PARTITION BY correlation) AS call_upid,
      is_kernel
    FROM (
      SELECT correlation, NULL AS device, upid AS call_upid, 0 AS is_kernel
      FROM kineto_runtime_calls
      WHERE
        correlation IS NOT NULL
      UNION ALL
      SELECT correlation, device, NULL, 1
      FROM kineto_kernels
      WHERE
        correlation IS NOT NULL
    )
  ),
  device_votes AS (
    SELECT device, call_upid AS upid, count(*) AS n
    FROM corr
    WHERE
      is_kernel = 1
      AND call_upid IS NOT NULL
    GROUP BY 1, 2
  ),
  devices AS (
    SELECT DISTINCT device FROM kineto_kernels WHERE device IS NOT NULL
  ),
  -- lanes: one per device, or, without device activity, one host-only lane per process (device NULL,
  -- negative key)
  lanes AS (
    SELECT
      d.device AS lane,
      d.device,
      coalesce(
        (
          SELECT v.upid
          FROM device_votes AS v
          WHERE
            v.device = d.device
            AND v.upid IN (SELECT upid FROM kineto_iterations)
          ORDER BY v.n DESC, v.upid
          LIMIT 1
        ),
        -- the launching process has no windows (a ProfilerStep recorded in another process): the process
        -- whose windows cover the most time
        (SELECT upid FROM kineto_iterations GROUP BY upid ORDER BY sum(dur) DESC, upid LIMIT 1),
        (SELECT upid FROM main_process)
      ) AS upid
    FROM devices AS d
    UNION ALL
    SELECT -1 - w.upid, NULL, w.upid
    FROM (SELECT DISTINCT upid FROM kineto_iterations) AS w
    WHERE
      NOT EXISTS (SELECT 1 FROM devices)
  ),
  has_devices AS (
    SELECT EXISTS (SELECT 1 FROM devices) AS yes
  )
SELECT lane, device, upid FROM lanes;

-- Host intervals that decide what an idle device (or a host-only lane) was waiting on, one row per
-- interval with its kind: sync, bcopy, alloc, launch, prof, dl, gc, hcomm, op, any, hread, optim.
--
-- A slice adds nothing to the sweep when its parent on the same track (which contains it) already opens
-- every count the slice would open: an ATen op inside an ATen op, any host slice of kind `any` inside an
-- op or python frame, a launch call inside the op that issued it. Such slices are left out, which changes
-- no bucket's time (only the number of boundaries the sweep sorts: most host slices are nested).
CREATE OR REPLACE PERFETTO TABLE _kineto_ledger_host_kinds(
  -- Process.
  upid LONG,
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Kind of host work.
  k STRING
) AS
WITH
  has_devices AS (
    SELECT EXISTS (SELECT 1 FROM kineto_kernels WHERE device IS NOT NULL) AS yes
  ),
  -- host slices with the kind each opens in the sweep and the kind of its parent (NULL when the parent
  -- is no host op or python frame)
  host_slices AS (
    SELECT
      h.id,
      h.ts,
      h.dur,
      h.name,
      h.category,
      h.event_class,
      h.upid,
      h.parent_id,
      CASE
        WHEN p.event_class = 'cpu_op' AND p.category != 'user_annotation' AND NOT p.name GLOB 'ProfilerStep#*'
          THEN 'op'
        WHEN p.event_class IN ('cpu_op', 'python') THEN 'any'
      END AS parent_k
    FROM kineto_host_slices AS h
    LEFT JOIN kineto_host_slices AS p
      ON p.id = h.parent_id
      AND p.dur > 0
    WHERE
      h.dur > 0
  ),
  -- the ATen op that issued a launch: its whole interval is issuing work
  launch_ops AS (
    SELECT p.upid, p.ts, p.dur
    FROM kineto_runtime_calls AS r
    JOIN kineto_host_slices AS h
      USING (id)
    JOIN kineto_host_slices AS p
      ON p.id = h.parent_id
    WHERE
      r.class = 'launch'
      AND p.event_class = 'cpu_op'
      AND p.dur > 0
    GROUP BY p.id
  ),
  runtime_kinds AS (
    SELECT r.upid, r.ts, r.dur, CASE
        WHEN r.class IN ('stream_sync', 'device_sync', 'event_sync') THEN 'sync'
        WHEN r.class = 'blocking_copy' THEN 'bcopy'
        WHEN r.class IN ('malloc', 'free') THEN 'alloc'
        WHEN r.class = 'launch' THEN 'launch'
        WHEN r.class = 'profiler_flush' THEN 'prof'
        ELSE 'any'
      END AS k, h.parent_k
    FROM kineto_runtime_calls AS r
    JOIN host_slices AS h
      USING (id)
  ),
  -- host intervals of a process, by kind (one row each)
  host_kinds AS (
    SELECT upid, ts, dur, k
    FROM runtime_kinds
    WHERE
      -- inside an op or frame, `any` adds nothing; inside an op, a launch call adds nothing to the
      -- op's own launch row
      NOT (k = 'any' AND parent_k IS NOT NULL)
      AND NOT (k = 'launch' AND parent_k IS 'op')
    UNION ALL
    SELECT upid, ts, dur, 'launch'
    FROM launch_ops
    UNION ALL
    SELECT d.upid, d.ts, d.dur, 'dl'
    FROM kineto_dataloader AS d
    WHERE
      d.dur > 0
    UNION ALL
    SELECT t.upid, s.ts, s.dur, 'gc'
    FROM slice AS s
    JOIN thread_track AS tt
      ON tt.id = s.track_id
    JOIN thread AS t
      USING (utid)
    WHERE
      s.name = 'Python GC'
      AND s.dur > 0
    UNION ALL
    SELECT t.upid, s.ts, s.dur, 'prof'
    FROM slice AS s
    JOIN thread_track AS tt
      ON tt.id = s.track_id
    JOIN thread AS t
      USING (utid)
    WHERE
      s.category = 'overhead'
      AND s.dur > 0
    UNION ALL
    SELECT t.upid, c.ts, c.dur, 'hcomm'
    FROM kineto_collectives AS c
    JOIN slice AS s
      ON s.id = c.id
    JOIN thread_track AS tt
      ON tt.id = s.track_id
    JOIN thread AS t
      USING (utid)
    WHERE
      c.source = 'cpu'
      AND c.dur > 0
    UNION ALL
    SELECT upid, ts, dur, k
    FROM (
      SELECT h.upid, h.ts, h.dur, CASE
          WHEN h.event_class = 'cpu_op' AND h.category != 'user_annotation' AND NOT h.name GLOB 'ProfilerStep#*'
            THEN 'op'
          ELSE 'any'
        END AS k, h.parent_k
      FROM host_slices AS h
      WHERE
        h.event_class IN ('cpu_op', 'python')
    )
    WHERE
      -- an op inside an op, or any slice of kind `any` inside an op or frame, opens nothing new
      NOT (k = 'op' AND parent_k IS 'op')
      AND NOT (k = 'any' AND parent_k IS NOT NULL)
    UNION ALL
    -- host-only lanes: ATen host reads (device syncs on a GPU), and what excuses them: Optimizer.step
    -- (torch.optim reads its CPU step counters) and composite ops that read inside their CPU kernels only
    -- (kineto.lib.internal_reads)
    SELECT h.upid, h.ts, h.dur, CASE
        WHEN h.name IN ('aten::_local_scalar_dense', 'aten::nonzero', 'aten::masked_select') THEN 'hread'
        ELSE 'optim'
      END
    FROM host_slices AS h
    WHERE
      NOT (SELECT yes FROM has_devices)
      AND h.event_class = 'cpu_op'
      AND (
        h.name IN ('aten::_local_scalar_dense', 'aten::nonzero', 'aten::masked_select')
        OR h.name GLOB 'Optimizer.step#*'
        OR h.name IN (SELECT name FROM kineto_internal_reads)
      )
  )
SELECT upid, ts, dur, k FROM host_kinds;

-- Time per (lane, window, bucket): the sweep (see kineto_ledger for the precedence).
CREATE OR REPLACE PERFETTO TABLE _kineto_ledger_buckets(
  -- Lane key (device, or -1 - upid for a host-only lane).
  lane LONG,
  -- Window id.
  win_id LONG,
  -- Bucket name.
  bucket STRING,
  -- Time in the bucket.
  dur DURATION,
  -- Start of the first segment.
  first_ts TIMESTAMP,
  -- Number of separate stretches of the bucket in the window.
  segment_count LONG
) AS
WITH
  -- +1 / -1 boundary events per lane. Open counts are packed into five integers (12-, 10-, 16- or 24-bit
  -- fields, see `counts`): the sweep then carries 5 running sums instead of 23, which is what makes it
  -- cheap. Each field holds a count of open intervals of one kind, never negative once all events of a
  -- timestamp are summed, and far below its field's range (4096 concurrent kernels of one family, 1024
  -- concurrent host syncs, 16 M open host slices, 32 K open windows).
  edges AS (
    -- windows
    SELECT l.lane, w.ts, 1 AS d_win, w.id AS win_seq, NULL AS k, 1 AS sign
    FROM kineto_iterations AS w
    JOIN _kineto_ledger_lanes AS l
      USING (upid)
    UNION ALL
    SELECT l.lane, w.ts + w.dur, -1, NULL, NULL, 1
    FROM kineto_iterations AS w
    JOIN _kineto_ledger_lanes AS l
      USING (upid)
    UNION ALL
    -- device activities
    SELECT f.device, f.ts, 0, NULL, CASE f.class
        WHEN 'communication' THEN 'comm'
        WHEN 'attention' THEN 'attention'
        WHEN 'softmax' THEN 'attention'
        WHEN 'gemm' THEN 'gemm'
        WHEN 'conv' THEN 'gemm'
        WHEN 'norm' THEN 'elementwise'
        WHEN 'reduction' THEN 'elementwise'
        WHEN 'elementwise' THEN 'elementwise'
        WHEN 'copy_kernel' THEN 'elementwise'
        WHEN 'memcpy_htod' THEN 'copy_htod'
        WHEN 'memcpy_dtoh' THEN 'copy_dtoh'
        WHEN 'memcpy_dtod' THEN 'copy_dtod'
        WHEN 'memcpy_other' THEN 'copy_other'
        WHEN 'memset' THEN 'memset'
        ELSE 'compute_other'
      END, 1
    FROM kineto_kernel_classes AS f
    WHERE
      f.dur > 0
    UNION ALL
    SELECT f.device, f.ts + f.dur, 0, NULL, CASE f.class
        WHEN 'communication' THEN 'comm'
        WHEN 'attention' THEN 'attention'
        WHEN 'softmax' THEN 'attention'
        WHEN 'gemm' THEN 'gemm'
        WHEN 'conv' THEN 'gemm'
        WHEN 'norm' THEN 'elementwise'
        WHEN 'reduction' THEN 'elementwise'
        WHEN 'elementwise' THEN 'elementwise'
        WHEN 'copy_kernel' THEN 'elementwise'
        WHEN 'memcpy_htod' THEN 'copy_htod'
        WHEN 'memcpy_dtoh' THEN 'copy_dtoh'
        WHEN 'memcpy_dtod' THEN 'copy_dtod'
        WHEN 'memcpy_other' THEN 'copy_other'
        WHEN 'memset' THEN 'memset'
        ELSE 'compute_other'
      END, -1
    FROM kineto_kernel_classes AS f
    WHERE
      f.dur > 0
    UNION ALL
    -- short whole-device idle gaps (under 100 us): the device ran dry between two launches
    SELECT g.device, g.ts, 0, NULL, 'shortgap', 1
    FROM kineto_gpu_idle AS g
    WHERE
      g.stream IS NULL
      AND g.dur < 100000
    UNION ALL
    SELECT g.device, g.ts + g.dur, 0, NULL, 'shortgap', -1
    FROM kineto_gpu_idle AS g
    WHERE
      g.stream IS NULL
      AND g.dur < 100000
    UNION ALL
    -- host intervals of the lane's process
    SELECT l.lane, h.ts, 0, NULL, h.k, 1
    FROM _kineto_ledger_host_kinds AS h
    JOIN _kineto_ledger_lanes AS l
      USING (upid)
    UNION ALL
    SELECT l.lane, h.ts + h.dur, 0, NULL, h.k, -1
    FROM _kineto_ledger_host_kinds AS h
    JOIN _kineto_ledger_lanes AS l
      USING (upid)
  ),
  events AS (
    SELECT
      lane,
      ts,
      d_win,
      win_seq,
      sign * CASE k WHEN 'comm' THEN 1 WHEN 'attention' THEN 4096 WHEN 'gemm' THEN 16777216 WHEN 'elementwise' THEN 68719476736 WHEN 'compute_other' THEN 281474976710656 ELSE 0 END AS d1,
      sign * CASE k WHEN 'copy_htod' THEN 1 WHEN 'copy_dtoh' THEN 4096 WHEN 'copy_dtod' THEN 16777216 WHEN 'copy_other' THEN 68719476736 WHEN 'memset' THEN 281474976710656 ELSE 0 END AS d2,
      sign * CASE k WHEN 'sync' THEN 1 WHEN 'bcopy' THEN 1024 WHEN 'dl' THEN 1048576 WHEN 'hcomm' THEN 1073741824 WHEN 'gc' THEN 1099511627776 WHEN 'prof' THEN 1125899906842624 ELSE 0 END AS h1,
      sign * CASE k WHEN 'alloc' THEN 1 WHEN 'launch' THEN 4096 WHEN 'hread' THEN 16777216 WHEN 'optim' THEN 68719476736 WHEN 'shortgap' THEN 281474976710656 ELSE 0 END AS h2,
      sign * CASE WHEN k = 'op' THEN 16777217 WHEN k IN ('any', 'launch', 'sync', 'bcopy', 'alloc', 'prof', 'dl', 'gc')
        THEN 16777216 ELSE 0 END + d_win * 281474976710656 AS h3
    FROM edges
  ),
  -- the running sums at the last event of a timestamp are the open counts until the next timestamp;
  -- earlier events of the same timestamp get a zero-length segment and are dropped
  swept AS (
    SELECT
      lane,
      ts,
      lead(ts) OVER w AS next_ts,
      max(win_seq) OVER w AS win_id,
      sum(d1) OVER w AS p1,
      sum(d2) OVER w AS p2,
      sum(h1) OVER w AS q1,
      sum(h2) OVER w AS q2,
      sum(h3) OVER w AS q3
    FROM events
    WINDOW w AS (PARTITION BY lane ORDER BY ts ROWS UNBOUNDED PRECEDING)
  ),
  counts AS (
    SELECT
      lane,
      win_id,
      ts,
      next_ts - ts AS dur,
      p1 & 4095 AS n_comm,
      (p1 >> 12) & 4095 AS n_attention,
      (p1 >> 24) & 4095 AS n_gemm,
      (p1 >> 36) & 4095 AS n_elementwise,
      (p1 >> 48) & 4095 AS n_compute_other,
      p2 AS n_memory,
      p2 & 4095 AS n_htod,
      (p2 >> 12) & 4095 AS n_dtoh,
      (p2 >> 24) & 4095 AS n_dtod,
      (p2 >> 36) & 4095 AS n_copy_other,
      q1 & 1023 AS n_sync,
      (q1 >> 10) & 1023 AS n_bcopy,
      (q1 >> 20) & 1023 AS n_dl,
      (q1 >> 30) & 1023 AS n_hcomm,
      (q1 >> 40) & 1023 AS n_gc,
      (q1 >> 50) & 1023 AS n_prof,
      q2 & 4095 AS n_alloc,
      (q2 >> 12) & 4095 AS n_launch,
      (q2 >> 24) & 4095 AS n_hread,
      (q2 >> 36) & 4095 AS n_optim,
      (q2 >> 48) & 4095 AS n_shortgap,
      q3 & 16777215 AS n_op,
      (q3 >> 24) & 16777215 AS n_any
    FROM swept
    WHERE
      -- open windows, in the top field of q3
      q3 >> 48 > 0
      AND next_ts > ts
  ),
  segments AS (
    SELECT
      s.lane,
      s.win_id,
      s.ts,
      s.dur,
      CASE
        WHEN s.lane < 0 THEN
          CASE
            WHEN s.n_hread > 0 AND s.n_optim = 0 THEN 'host.sync_read'
            WHEN s.n_sync > 0 OR s.n_bcopy > 0 THEN 'host.sync_read'
            WHEN s.n_hcomm > 0 THEN 'host.comm_wait'
            WHEN s.n_dl > 0 THEN 'host.dataloader'
            WHEN s.n_gc > 0 THEN 'host.gc'
            WHEN s.n_prof > 0 THEN 'host.profiler'
            WHEN s.n_op > 0 THEN 'host.ops'
            WHEN s.n_any > 0 THEN 'host.python'
            ELSE 'host.unattributed'
          END
        WHEN s.n_comm > 0 OR s.n_attention + s.n_gemm + s.n_elementwise + s.n_compute_other > 0 OR s.n_memory > 0 THEN
          CASE
            WHEN s.n_comm > 0 AND s.n_attention + s.n_gemm + s.n_elementwise + s.n_compute_other = 0
              THEN 'busy.comm_exposed'
            WHEN s.n_comm > 0 THEN 'busy.comm_overlapped'
            WHEN s.n_attention > 0 THEN 'busy.attention'
            WHEN s.n_gemm > 0 THEN 'busy.gemm'
            WHEN s.n_elementwise > 0 THEN 'busy.elementwise'
            WHEN s.n_compute_other > 0 THEN 'busy.compute_other'
            WHEN s.n_htod > 0 THEN 'busy.copy_htod'
            WHEN s.n_dtoh > 0 THEN 'busy.copy_dtoh'
            WHEN s.n_dtod > 0 THEN 'busy.copy_dtod'
            WHEN s.n_copy_other > 0 THEN 'busy.copy_other'
            ELSE 'busy.memset'
          END
        WHEN s.n_sync > 0 THEN 'idle.sync'
        WHEN s.n_bcopy > 0 THEN 'idle.blocking_copy'
        WHEN s.n_dl > 0 THEN 'idle.dataloader'
        WHEN s.n_hcomm > 0 THEN 'idle.comm_wait'
        WHEN s.n_gc > 0 THEN 'idle.gc'
        WHEN s.n_prof > 0 THEN 'idle.profiler'
        WHEN s.n_alloc > 0 THEN 'idle.alloc'
        WHEN s.n_launch > 0 OR (s.n_shortgap > 0 AND s.n_any > 0) THEN 'idle.launch'
        WHEN s.n_any > 0 THEN 'idle.host_compute'
        ELSE 'idle.unattributed'
      END AS bucket
    FROM counts AS s
  ),
  -- segments of one window are contiguous, so a segment starts a separate stretch of its bucket unless
  -- the lane's previous segment is in the same window and bucket
  runs AS (
    SELECT
      *,
      lag(bucket) OVER w IS NOT bucket OR lag(win_id) OVER w IS NOT win_id AS starts
    FROM segments
    WINDOW w AS (PARTITION BY lane ORDER BY ts)
  ),
  per_bucket AS (
    SELECT
      lane,
      win_id,
      bucket,
      sum(dur) AS dur,
      min(ts) AS first_ts,
      sum(starts) AS segment_count
    FROM runs
    GROUP BY lane, win_id, bucket
  )
SELECT lane, win_id, bucket, dur, first_ts, segment_count FROM per_bucket;

-- The step-time ledger: every nanosecond of every iteration window (kineto.lib.iterations), per device,
-- in exactly one bucket, so the buckets of a window sum to its width exactly and a finding that claims a
-- bucket can never claim time another finding claims.
--
-- How: one sorted sweep per lane (a device, or the host itself on a capture without device activity) over
-- the start (+1) and end (-1) of every window, device activity and host interval of the lane's host
-- process. Running sums give, for each elementary segment between two consecutive boundaries, how many of
-- each kind are open; the segment's bucket follows from those counts by the precedence below. Cost: one
-- sort of about twice the number of events, never a join per row.
--
-- The host process of a device is the process with windows whose runtime calls launched most of its work
-- (by correlation), else the process whose windows cover the most time.
--
-- Device busy (any activity on any stream of the device), first that applies:
--   busy.comm_exposed     a collective kernel runs and no compute kernel does (nothing hides it)
--   busy.comm_overlapped  a collective kernel runs under compute
--   busy.attention        fused attention and stand-alone softmax (kineto.lib.kernel_classes)
--   busy.gemm             GEMM and convolution
--   busy.elementwise      elementwise, norm, reduction and copy kernels (memory-bound work)
--   busy.compute_other    embedding and any other compute kernel
--   busy.copy_htod, busy.copy_dtoh, busy.copy_dtod, busy.copy_other, busy.memset   memory work alone
-- Compute beats copies because a copy that runs under a kernel costs no step time by itself.
--
-- Device idle, by what the host process was doing at that instant, first that applies:
--   idle.sync            in a stream / device / event synchronize (kineto.lib.runtime_calls): the host
--                        waits for the device, and the device ran dry while it waited
--   idle.blocking_copy   in a copy the host waits for (cudaMemcpy, pageable cudaMemcpyAsync,
--                        hipMemcpyWithStream...)
--   idle.dataloader      in a DataLoader __next__ (waiting on, or building, the next batch)
--   idle.comm_wait       in a host-side collective (gloo, or a synchronous c10d call): exposed
--                        communication the device cannot see
--   idle.gc              in a Python GC pause: the interpreter is stopped whatever frame is open, so GC
--                        beats the launch and compute states below
--   idle.profiler        in profiler overhead (CUPTI flush, Kineto buffer work)
--   idle.alloc           in a device / pinned malloc or free (cudaFree also synchronizes the device);
--                        first-iteration allocator warm-up lands here
--   idle.launch          in a launch call or in the ATen op that issued a launch, or in any host slice
--                        during a whole-device idle gap shorter than 100 us: the device ran dry between two
--                        launches because the host issues work no faster than this (launch-bound; see
--                        catalog.small_op_storm). 100 us is several times the whole eager path of one op
--                        (Python + ATen dispatch + cudaLaunchKernel, 10-50 us, more under the profiler): a
--                        shorter gap is the issue path itself, a longer one is host work between launches
--   idle.host_compute    inside any other host slice: ATen CPU work, Python frames, annotations, or
--                        Python between ops inside the step (host compute without launches)
--   idle.unattributed    no host slice of the process is open: nothing in the trace says why
-- Syncs come first because a waiting host is the proximate cause of that idle time whatever else is open
-- around the wait (the op above a sync is how it was reached, not what the device waited for).
--
-- Host-only lanes (a capture without any device activity: CPU training, the golden recordings) split the
-- window by the same causes seen from the host, first that applies: host.sync_read (an ATen host read of a
-- tensor value, `aten::_local_scalar_dense` / `nonzero` / `masked_select`, outside Optimizer.step and the
-- composite ops of kineto.lib.internal_reads: each is a device sync once the same code runs on a GPU), host.comm_wait, host.dataloader, host.gc, host.profiler,
-- host.ops (inside ATen ops: CPU compute), host.python (inside other host slices), host.unattributed.
CREATE OR REPLACE PERFETTO TABLE kineto_ledger(
  -- Window id (kineto_iterations.id).
  window_id LONG,
  -- Process of the window.
  upid JOINID(process.id),
  -- Device index; NULL for the host-only lane of a capture without device activity.
  device LONG,
  -- Iteration number (kineto_iterations.step).
  step LONG,
  -- Window source (kineto_iterations.source).
  source STRING,
  -- The window is a cold start (kineto_iterations.is_cold).
  is_cold BOOL,
  -- Window start.
  window_ts TIMESTAMP,
  -- Window width: the buckets of one (window, device) sum to it exactly.
  window_dur DURATION,
  -- Bucket name, e.g. busy.gemm, idle.sync, host.ops.
  bucket STRING,
  -- busy, idle or host.
  kind STRING,
  -- Time in the bucket.
  dur DURATION,
  -- Start of the first segment of the bucket in the window.
  first_ts TIMESTAMP,
  -- Number of separate stretches of the bucket in the window (maximal runs: two stretches of the bucket
  -- are separate when another bucket's time lies between them).
  segment_count LONG
) AS
SELECT
  w.id AS window_id,
  w.upid,
  CASE WHEN b.lane < 0 THEN NULL ELSE b.lane END AS device,
  w.step,
  w.source,
  w.is_cold,
  w.ts AS window_ts,
  w.dur AS window_dur,
  b.bucket,
  substr(b.bucket, 1, instr(b.bucket, '.') - 1) AS kind,
  b.dur,
  b.first_ts,
  b.segment_count
FROM _kineto_ledger_buckets AS b
JOIN kineto_iterations AS w
  ON w.id = b.win_id
ORDER BY w.id, b.lane, b.bucket;
