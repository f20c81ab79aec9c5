-- version: 11

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.compiled_wrappers;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.kernel_classes;
INCLUDE PERFETTO MODULE kineto.lib.kernel_class_buckets;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.dataloader;
INCLUDE PERFETTO MODULE kineto.lib.collectives;
INCLUDE PERFETTO MODULE kineto.lib.gpu_idle;
INCLUDE PERFETTO MODULE kineto.lib.internal_reads;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;
INCLUDE PERFETTO MODULE intervals.intersect;

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
  -- device -> host process, by the launches of its work: each activity joins the calls with its
  -- correlation id (kineto_runtime_calls is indexed on it; a join, not a correlated subquery per
  -- activity, which costs four times as much here)
  device_votes AS (
    SELECT device, upid, count(*) AS n
    FROM (
      SELECT k.device, max(r.upid) AS upid
      FROM kineto_kernels AS k
      JOIN kineto_runtime_calls AS r
        ON r.correlation = k.correlation
      GROUP BY k.id
    )
    WHERE
      upid IS NOT NULL
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
  -- Unique key: the slice id times 16 plus the branch (a slice can be an op and a launch op).
  id LONG,
  -- Process.
  upid LONG,
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Kind of host work.
  k STRING,
  -- What the interval adds to the sweep's packed host counts q1, q2, q3 while open (see
  -- _kineto_ledger_buckets).
  h1 LONG,
  -- Added to q2.
  h2 LONG,
  -- Added to q3.
  h3 LONG
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
      h.utid,
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
  -- the launching ops: an ATen op with a launch anywhere beneath it on its thread (not only the innermost
  -- op that made the call: aten::linear as well as the aten::addmm under it), or a compiled region's
  -- wrapper (kineto.lib.compiled_wrappers) with a launch beneath it. Its whole interval is issuing work:
  -- the host time between its launches (dispatch, the wrapper's Python, the generated code) is launch
  -- overhead, not host compute. Only the outermost op of a chain of nested ops is tested (an op inside an
  -- op is inside a launching op whenever it is one); one interval intersection of those slices with the
  -- launch calls per thread, then the containment check.
  stack_tops AS (
    SELECT h.id, h.ts, h.dur, h.utid, h.upid
    FROM host_slices AS h
    WHERE
      (
        h.event_class = 'cpu_op'
        AND h.category != 'user_annotation'
        AND NOT h.name GLOB 'ProfilerStep#*'
        AND h.parent_k IS NOT 'op'
      )
      OR h.id IN (SELECT id FROM kineto_compiled_wrappers)
  ),
  launch_calls AS (
    SELECT r.id, r.ts, max(r.dur, 1) AS dur, r.utid
    FROM kineto_runtime_calls AS r
    WHERE
      r.class = 'launch'
      AND r.utid IS NOT NULL
  ),
  launch_ops AS (
    SELECT t.id, t.upid, t.ts, t.dur
    FROM _interval_intersect!(
      (
        (SELECT id, ts, dur, utid FROM stack_tops),
        (SELECT id, ts, dur, utid FROM launch_calls)
      ),
      (utid)
    ) AS ii
    JOIN stack_tops AS t
      ON t.id = ii.id_0
    JOIN launch_calls AS l
      ON l.id = ii.id_1
    WHERE
      l.ts >= t.ts
      AND l.ts < t.ts + t.dur
    GROUP BY t.id
  ),
  runtime_kinds AS (
    SELECT r.id, r.upid, r.ts, r.dur, CASE
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
    SELECT id * 16 + 1 AS id, upid, ts, dur, k
    FROM runtime_kinds
    WHERE
      -- inside an op or frame, `any` adds nothing; inside an op, a launch call adds nothing to the
      -- op's own launch row
      NOT (k = 'any' AND parent_k IS NOT NULL)
      AND NOT (k = 'launch' AND parent_k IS 'op')
    UNION ALL
    SELECT id * 16 + 2, upid, ts, dur, 'launch'
    FROM launch_ops
    UNION ALL
    SELECT d.id * 16 + 3, d.upid, d.ts, d.dur, 'dl'
    FROM kineto_dataloader AS d
    WHERE
      d.dur > 0
    UNION ALL
    SELECT s.id * 16 + 4, s.upid, s.ts, s.dur, 'gc'
    FROM kineto_thread_track_slices AS s
    WHERE
      s.name = 'Python GC'
      AND s.dur > 0
    UNION ALL
    SELECT s.id * 16 + 5, s.upid, s.ts, s.dur, 'prof'
    FROM kineto_thread_track_slices AS s
    WHERE
      s.category = 'overhead'
      AND s.dur > 0
    UNION ALL
    SELECT c.id * 16 + 6, s.upid, c.ts, c.dur, 'hcomm'
    FROM kineto_collectives AS c
    JOIN kineto_thread_track_slices AS s
      ON s.id = c.id
    WHERE
      c.source = 'cpu'
      AND c.dur > 0
    UNION ALL
    SELECT id * 16 + 7, upid, ts, dur, k
    FROM (
      SELECT h.id, h.upid, h.ts, h.dur, CASE
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
    SELECT h.id * 16 + 8, h.upid, h.ts, h.dur, CASE
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
SELECT
  id,
  upid,
  ts,
  dur,
  k,
  CASE k
    WHEN 'sync' THEN 1
    WHEN 'bcopy' THEN 1024
    WHEN 'dl' THEN 1048576
    WHEN 'hcomm' THEN 1073741824
    WHEN 'gc' THEN 1099511627776
    WHEN 'prof' THEN 1125899906842624
    ELSE 0
  END AS h1,
  CASE k
    WHEN 'alloc' THEN 1
    WHEN 'launch' THEN 4096
    WHEN 'hread' THEN 16777216
    WHEN 'optim' THEN 68719476736
    ELSE 0
  END AS h2,
  CASE
    WHEN k = 'op' THEN 16777217
    WHEN k IN ('any', 'launch', 'sync', 'bcopy', 'alloc', 'prof', 'dl', 'gc') THEN 16777216
    ELSE 0
  END AS h3
FROM host_kinds;

-- Idle stretches of each device lane, numbered: the gaps between the device's busy intervals
-- (kineto_gpu_idle) and the time before its first and after its last, as far as any host interval reaches.
CREATE OR REPLACE PERFETTO TABLE _kineto_ledger_lane_idle(
  -- Row number.
  id LONG,
  -- Lane (device).
  lane LONG,
  -- Host process of the lane.
  upid LONG,
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION
) AS
WITH
  idle AS (
    SELECT g.device, g.ts, g.dur
    FROM kineto_gpu_idle AS g
    WHERE
      g.stream IS NULL
      AND g.dur > 0
    UNION ALL
    SELECT
      b.device,
      min(min(b.ts), (SELECT min(ts) FROM _kineto_ledger_host_kinds)),
      min(b.ts) - min(min(b.ts), (SELECT min(ts) FROM _kineto_ledger_host_kinds))
    FROM kineto_device_busy AS b
    GROUP BY b.device
    UNION ALL
    SELECT
      b.device,
      max(b.ts + b.dur),
      max((SELECT max(ts + dur) FROM _kineto_ledger_host_kinds) - max(b.ts + b.dur), 0)
    FROM kineto_device_busy AS b
    GROUP BY b.device
  )
SELECT row_number() OVER () AS id, l.lane, l.upid, i.ts, i.dur
FROM idle AS i
JOIN _kineto_ledger_lanes AS l
  ON l.device = i.device
ORDER BY id;

-- The host intervals that can decide a bucket of a device lane: those that overlap an idle stretch of the
-- lane's device for a positive time. A host interval wholly inside a busy interval of the device changes
-- no bucket, no stretch and no duration of that lane's ledger (while it is open the device is busy, and a
-- busy bucket does not depend on the host), so the sweep leaves it out: most host intervals of a
-- device-bound trace. One interval intersection per process.
CREATE OR REPLACE PERFETTO TABLE _kineto_ledger_host_idle(
  -- _kineto_ledger_host_kinds.id.
  id LONG,
  -- Lane (device) where it overlaps idle time.
  lane LONG
) AS
SELECT DISTINCT ii.id_0 AS id, il.lane
FROM _interval_intersect!(
  (
    (SELECT h.id, h.ts, h.dur, h.upid FROM _kineto_ledger_host_kinds AS h),
    (SELECT il.id, il.ts, il.dur, il.upid FROM _kineto_ledger_lane_idle AS il)
  ),
  (upid)
) AS ii
CROSS JOIN _kineto_ledger_lane_idle AS il
  ON il.id = ii.id_1
WHERE
  ii.dur > 0
ORDER BY id;

-- The bucket of a segment from the packed open counts of the sweep (fields as packed in
-- _kineto_ledger_buckets; the precedence is documented at kineto_ledger).
CREATE OR REPLACE PERFETTO MACRO _kineto_ledger_bucket(
  -- Lane key (negative: host-only lane).
  lane Expr,
  -- Open device compute kernels: comm, attention, gemm, elementwise, compute_other (12 bits each).
  p1 Expr,
  -- Open memory activities: copy_htod, copy_dtoh, copy_dtod, copy_other, memset (12 bits each).
  p2 Expr,
  -- Open host waits: sync, bcopy, dl, hcomm, gc, prof (10 bits each).
  q1 Expr,
  -- Open alloc, launch, hread, optim, shortgap (12 bits each).
  q2 Expr,
  -- Open op (24 bits), any host slice (24 bits), windows (16 bits).
  q3 Expr
)
RETURNS Expr AS
CASE
  WHEN $lane < 0 THEN
    CASE
      WHEN (($q2 >> 24) & 4095) > 0 AND (($q2 >> 36) & 4095) = 0 THEN 'host.sync_read'
      WHEN ($q1 & 1023) > 0 OR (($q1 >> 10) & 1023) > 0 THEN 'host.sync_read'
      WHEN (($q1 >> 30) & 1023) > 0 THEN 'host.comm_wait'
      WHEN (($q1 >> 20) & 1023) > 0 THEN 'host.dataloader'
      WHEN (($q1 >> 40) & 1023) > 0 THEN 'host.gc'
      WHEN (($q1 >> 50) & 1023) > 0 THEN 'host.profiler'
      WHEN ($q3 & 16777215) > 0 THEN 'host.ops'
      WHEN (($q3 >> 24) & 16777215) > 0 THEN 'host.python'
      ELSE 'host.unattributed'
    END
  WHEN $p1 != 0 OR $p2 != 0 THEN
    CASE
      WHEN ($p1 & 4095) > 0 AND ($p1 >> 12) = 0 THEN 'busy.comm_exposed'
      WHEN ($p1 & 4095) > 0 THEN 'busy.comm_overlapped'
      WHEN (($p1 >> 12) & 4095) > 0 THEN 'busy.attention'
      WHEN (($p1 >> 24) & 4095) > 0 THEN 'busy.gemm'
      WHEN (($p1 >> 36) & 4095) > 0 THEN 'busy.elementwise'
      WHEN (($p1 >> 48) & 4095) > 0 THEN 'busy.compute_other'
      WHEN ($p2 & 4095) > 0 THEN 'busy.copy_htod'
      WHEN (($p2 >> 12) & 4095) > 0 THEN 'busy.copy_dtoh'
      WHEN (($p2 >> 24) & 4095) > 0 THEN 'busy.copy_dtod'
      WHEN (($p2 >> 36) & 4095) > 0 THEN 'busy.copy_other'
      ELSE 'busy.memset'
    END
  WHEN ($q1 & 1023) > 0 THEN 'idle.sync'
  WHEN (($q1 >> 10) & 1023) > 0 THEN 'idle.blocking_copy'
  WHEN (($q1 >> 20) & 1023) > 0 THEN 'idle.dataloader'
  WHEN (($q1 >> 30) & 1023) > 0 THEN 'idle.comm_wait'
  WHEN (($q1 >> 40) & 1023) > 0 THEN 'idle.gc'
  WHEN (($q1 >> 50) & 1023) > 0 THEN 'idle.profiler'
  WHEN ($q2 & 4095) > 0 THEN 'idle.alloc'
  WHEN (($q2 >> 12) & 4095) > 0 OR ((($q2 >> 48) & 4095) > 0 AND (($q3 >> 24) & 16777215) > 0) THEN 'idle.launch'
  WHEN (($q3 >> 24) & 16777215) > 0 THEN 'idle.host_compute'
  ELSE 'idle.unattributed'
END;

-- What a device activity in a busy bucket (kineto.lib.kernel_class_buckets) adds to the sweep's packed count
-- of open compute families p1 (comm, attention, gemm, elementwise, compute_other; 12 bits each).
CREATE OR REPLACE PERFETTO MACRO _kineto_ledger_device_d1(
  -- kineto_kernel_class_buckets.bucket.
  bucket Expr
)
RETURNS Expr AS
CASE $bucket
  WHEN 'busy.comm_exposed' THEN 1
  WHEN 'busy.attention' THEN 4096
  WHEN 'busy.gemm' THEN 16777216
  WHEN 'busy.elementwise' THEN 68719476736
  WHEN 'busy.compute_other' THEN 281474976710656
  ELSE 0
END;

-- What it adds to the packed count of open memory activities p2 (copy_htod, copy_dtoh, copy_dtod,
-- copy_other, memset; 12 bits each).
CREATE OR REPLACE PERFETTO MACRO _kineto_ledger_device_d2(
  -- kineto_kernel_class_buckets.bucket.
  bucket Expr
)
RETURNS Expr AS
CASE $bucket
  WHEN 'busy.copy_htod' THEN 1
  WHEN 'busy.copy_dtoh' THEN 4096
  WHEN 'busy.copy_dtod' THEN 16777216
  WHEN 'busy.copy_other' THEN 68719476736
  WHEN 'busy.memset' THEN 281474976710656
  ELSE 0
END;

-- Whole-device idle gaps shorter than 100 us: the device ran dry between two launches (any host slice open
-- in one is idle.launch, see kineto_ledger).
CREATE OR REPLACE PERFETTO TABLE _kineto_ledger_short_gaps(
  -- Device.
  device LONG,
  -- Gap start.
  ts TIMESTAMP,
  -- Gap length.
  dur DURATION
) AS
SELECT g.device, g.ts, g.dur
FROM kineto_gpu_idle AS g
WHERE
  g.stream IS NULL
  AND g.dur < 100000;

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
  -- Boundary events per lane: +w at the start and -w at the end of every window, device activity and host
  -- interval, where w is what the interval adds to the open counts. Open counts are packed into five
  -- integers (12-, 10-, 16- or 24-bit fields, see _kineto_ledger_bucket): the sweep then carries 5 running
  -- sums instead of 23, which is what makes it cheap. Each field holds a count of open intervals of one
  -- kind, never negative once all events of a timestamp are summed, and far below its field's range (4096
  -- concurrent kernels of one family, 1024 concurrent host syncs, 16 M open host slices, 32 K open
  -- windows).
  intervals AS (
    -- windows (the start carries the window id)
    SELECT l.lane, w.ts, w.dur, w.id AS win_seq, 0 AS d1, 0 AS d2, 0 AS h1, 0 AS h2, 281474976710656 AS h3
    FROM kineto_iterations AS w
    JOIN _kineto_ledger_lanes AS l
      USING (upid)
    UNION ALL
    -- device activities: d1 counts compute families (comm, attention, gemm, elementwise, compute_other),
    -- d2 memory work (copy_htod, copy_dtoh, copy_dtod, copy_other, memset)
    SELECT
      f.device,
      f.ts,
      f.dur,
      NULL,
      -- the field of the class's bucket (kineto.lib.kernel_class_buckets), as _kineto_ledger_bucket reads it
      _kineto_ledger_device_d1!(coalesce(b.bucket, 'busy.compute_other')),
      _kineto_ledger_device_d2!(b.bucket),
      0,
      0,
      0
    FROM kineto_kernel_classes AS f
    LEFT JOIN kineto_kernel_class_buckets AS b
      USING (class)
    WHERE
      f.dur > 0
    UNION ALL
    -- short whole-device idle gaps (under 100 us): the device ran dry between two launches
    SELECT g.device, g.ts, g.dur, NULL, 0, 0, 0, 281474976710656, 0
    FROM _kineto_ledger_short_gaps AS g
    UNION ALL
    -- host intervals of the lane's process: all of them on a host-only lane, those that overlap the
    -- device's idle time on a device lane (_kineto_ledger_host_idle)
    SELECT l.lane, h.ts, h.dur, NULL, 0, 0, h.h1, h.h2, h.h3
    FROM _kineto_ledger_host_kinds AS h
    JOIN _kineto_ledger_lanes AS l
      USING (upid)
    WHERE
      l.lane < 0
      OR (h.id, l.lane) IN (SELECT id, lane FROM _kineto_ledger_host_idle)
  ),
  -- one row per (lane, instant): the boundary events of one timestamp summed, since the open counts only
  -- matter between two distinct timestamps. Window ids of a lane (its process's windows) are consecutive
  -- and rise with the window start, so the latest window started so far is the running max of the ids
  -- started, and before an instant it was that minus the windows started at it.
  events AS (
    SELECT
      lane,
      ts,
      max(win_seq) AS win_seq,
      count(win_seq) AS win_starts,
      sum(d1) AS d1,
      sum(d2) AS d2,
      sum(h1) AS h1,
      sum(h2) AS h2,
      sum(h3) AS h3
    FROM (
      SELECT i.lane, i.ts, i.win_seq, i.d1, i.d2, i.h1, i.h2, i.h3
      FROM intervals AS i
      UNION ALL
      SELECT i.lane, i.ts + i.dur, NULL, -i.d1, -i.d2, -i.h1, -i.h2, -i.h3
      FROM intervals AS i
    )
    GROUP BY lane, ts
  ),
  -- the running sums at an instant are the open counts until the next instant (the lane's segment that
  -- starts there); minus the instant's own events they are the counts of the segment that ends there.
  -- Only the five running sums are window functions: the counts before the instant are those sums minus
  -- the instant's own events, taken in with_prev (each extra window function costs a few ms per 10k
  -- instants; plain subtraction costs nothing)
  swept AS (
    SELECT
      lane,
      ts,
      max(win_seq) OVER w AS win_id,
      win_starts,
      d1,
      d2,
      h1,
      h2,
      h3,
      sum(d1) OVER w AS p1,
      sum(d2) OVER w AS p2,
      sum(h1) OVER w AS q1,
      sum(h2) OVER w AS q2,
      sum(h3) OVER w AS q3
    FROM events
    WINDOW w AS (PARTITION BY lane ORDER BY ts ROWS UNBOUNDED PRECEDING)
  ),
  -- the bucket of the segment that starts at each instant and of the one that ends there (NULL outside
  -- every window: the top field of q3 counts open windows). MATERIALIZED: runs reads bucket and
  -- prev_bucket several times, and SQLite, flattening this CTE into it, would copy the two bucket CASEs
  -- into every reference and evaluate them up to four times per instant (measured: 6% of this table)
  with_prev AS MATERIALIZED (
    SELECT
      lane,
      ts,
      win_id,
      win_starts,
      CASE WHEN q3 >> 48 > 0 THEN _kineto_ledger_bucket!(lane, p1, p2, q1, q2, q3) END AS bucket,
      CASE
        WHEN (q3 - h3) >> 48 > 0 THEN _kineto_ledger_bucket!(lane, p1 - d1, p2 - d2, q1 - h1, q2 - h2, q3 - h3)
      END AS prev_bucket
    FROM swept
  ),
  -- a stretch of a bucket (a run of segments in one window and bucket) starts where a window starts or the
  -- bucket changes, and ends at the next such instant of the lane or where the windows close: only those
  -- instants are kept, and each kept instant with a bucket is one stretch lasting until the next
  runs AS (
    SELECT
      lane,
      win_id,
      bucket,
      ts,
      lead(ts) OVER (PARTITION BY lane ORDER BY ts) - ts AS dur
    FROM with_prev
    WHERE
      (bucket IS NOT NULL AND (win_starts > 0 OR prev_bucket IS NOT bucket))
      OR (bucket IS NULL AND prev_bucket IS NOT NULL)
  ),
  per_bucket AS (
    SELECT
      lane,
      win_id,
      bucket,
      sum(dur) AS dur,
      min(ts) AS first_ts,
      count(*) AS segment_count
    FROM runs
    WHERE
      bucket IS NOT NULL
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
--   idle.launch          in a launch call, in an ATen op with a launch beneath it (any op on the stack
--                        that goes on to launch: the gap before its first launch and between its launches
--                        is dispatch and issue time), in a compiled region's wrapper with a launch beneath
--                        it (kineto.lib.compiled_wrappers: the wrapper's Python between the region's
--                        launches, which CUDA graphs remove), or in any host slice
--                        during a whole-device idle gap shorter than 100 us: the device ran dry between two
--                        launches because the host issues work no faster than this (launch-bound; see
--                        catalog.small_op_storm). 100 us is several times the whole eager path of one op
--                        (Python + ATen dispatch + cudaLaunchKernel, 10-50 us, more under the profiler): a
--                        shorter gap is the issue path itself, a longer one is host work between launches
--   idle.host_compute    inside any other host slice, with no launching op or compiled wrapper on the
--                        stack: ATen CPU work that launches nothing, Python frames, annotations, or Python
--                        between ops inside the step (host compute without launches)
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
