-- id: reading.gap_attribution
-- version: 6
-- kind: reading
-- title: GPU gap attribution: every device idle gap inside a step, with what the CPU side was doing
-- references: "torch.profiler & HTA: the Framework View", Reading order, step 3
-- needs: gpu, steps, cpu_ops
-- status: stable
-- default min_gap: 20us
-- default busy_pct: 50

-- Causes, first match wins: `input` (a DataLoader __next__ overlaps the gap), `sync` (a runtime call that
-- blocks the host overlaps it, a sync or a blocking copy as kineto.lib.runtime_calls classes it: the op
-- above it is named), `launch` (the host was inside ops or runtime calls
-- for at least busy_pct % of the gap: dispatch and launch work kept the device waiting), `none` (the host
-- was mostly outside any op: python, GC or the GIL).

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.enclosing_op;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.gpu_idle;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;

-- Host slices that name a gap cause: DataLoader __next__ (input) and synchronizing runtime calls (sync).
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_gap_marks(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- End (ts + dur).
  end_ts TIMESTAMP,
  -- Slice name.
  name STRING,
  -- Process of the slice.
  upid JOINID(process.id),
  -- `input` or `sync`.
  kind STRING
) AS
SELECT
  h.id,
  h.ts,
  h.dur,
  h.ts + h.dur AS end_ts,
  h.name,
  h.upid,
  'input' AS kind
FROM kineto_host_slices AS h
WHERE
  h.event_class IN ('cpu_op', 'python')
  AND (
    h.name GLOB '*DataLoader*__next__*'
    OR h.name GLOB '*dataloader.py(*): __next__'
  )
UNION ALL
-- syncs and blocking copies as kineto.lib.runtime_calls classifies them (a pageable cudaMemcpyAsync and
-- hipMemcpyWithStream included)
SELECT
  r.id,
  r.ts,
  r.dur,
  r.ts + r.dur AS end_ts,
  r.name,
  r.upid,
  'sync' AS kind
FROM kineto_runtime_calls AS r
WHERE
  r.blocks_host
ORDER BY ts;

-- When each process's host was inside an op or a runtime call (annotations and python frames excluded):
-- the union over its threads, as maximal intervals.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_gap_host_busy(
  -- Process.
  upid JOINID(process.id),
  -- Interval start.
  ts TIMESTAMP,
  -- Interval end.
  end_ts TIMESTAMP
) AS
WITH
  host AS (
    SELECT
      h.upid,
      h.ts,
      h.dur
    FROM kineto_host_slices AS h
    WHERE
      h.dur > 0
      AND (
        h.event_class = 'runtime'
        OR (
          h.event_class = 'cpu_op'
          AND h.category NOT IN (SELECT category FROM kineto_event_categories WHERE is_annotation)
          AND NOT h.name GLOB 'ProfilerStep#*'
          AND NOT h.name GLOB '*DataLoader*'
        )
      )
  )
SELECT
  upid,
  ts,
  ts + dur AS end_ts
FROM kineto_interval_merge!(host, (upid))
ORDER BY ts;

-- One row per device idle gap piece (a gap clipped to one CPU ProfilerStep window) of at least
-- min_gap, with its cause and the evidence for it.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_gap_attribution(
  -- Report device idle gaps (per device, clipped to a step) at least this long.
  min_gap DURATION,
  -- A gap the host spent at least this % inside ops / runtime calls is launch-bound.
  busy_pct DOUBLE
)
RETURNS TABLE(
  -- Step number N of the ProfilerStep#N window the gap piece lies in.
  step LONG,
  -- Device index.
  device LONG,
  -- Gap piece start.
  ts TIMESTAMP,
  -- Gap piece length.
  dur DURATION,
  -- input, sync, launch or none.
  cause STRING,
  -- The host-side name behind the cause: the DataLoader annotation (input); the outermost op above the
  -- synchronizing call, e.g. aten::item (sync); the op that launched the kernel ending the gap (launch);
  -- the innermost python frame at the gap's middle (none), or NULL.
  op STRING,
  -- The synchronizing runtime call (sync) and its innermost op, e.g. `cudaStreamSynchronize under
  -- aten::_local_scalar_dense`; NULL for other causes.
  sync_call STRING,
  -- Share of the gap the host spent inside ops or runtime calls, %.
  host_busy_pct DOUBLE,
  -- The device activity that ends the gap.
  next_kernel STRING,
  -- The op that launched it, or NULL.
  next_op STRING,
  -- One sentence with the numbers.
  evidence STRING
) AS
WITH
  pieces AS (
    SELECT
      st.step,
      st.upid,
      g.device,
      max(g.ts, st.ts) AS ts,
      min(g.ts + g.dur, st.ts + st.dur) - max(g.ts, st.ts) AS dur,
      g.ts + g.dur AS gap_end
    FROM kineto_gpu_idle AS g
    JOIN kineto_steps AS st
      ON g.ts < st.ts + st.dur
      AND g.ts + g.dur > st.ts
    WHERE
      g.stream IS NULL
  ),
  big AS (
    SELECT
      *,
      ts + dur AS end_ts
    FROM pieces
    WHERE
      dur >= $min_gap
  ),
  marked AS (
    SELECT
      b.*,
      (
        SELECT m.id
        FROM _kineto_reading_gap_marks AS m
        WHERE
          m.kind = 'input'
          AND m.upid = b.upid
          AND m.ts < b.end_ts
          AND m.end_ts > b.ts
        ORDER BY m.ts
        LIMIT 1
      ) AS input_id,
      (
        SELECT m.id
        FROM _kineto_reading_gap_marks AS m
        WHERE
          m.kind = 'sync'
          AND m.upid = b.upid
          AND m.ts < b.end_ts
          AND m.end_ts > b.ts
        ORDER BY m.ts
        LIMIT 1
      ) AS sync_id,
      coalesce(
        (
          SELECT sum(min(h.end_ts, b.end_ts) - max(h.ts, b.ts))
          FROM _kineto_reading_gap_host_busy AS h
          WHERE
            h.upid = b.upid
            AND h.ts < b.end_ts
            AND h.end_ts > b.ts
        ),
        0
      ) AS busy_dur,
      (
        SELECT k.id
        FROM kineto_kernels AS k
        WHERE
          k.device = b.device
          AND k.ts = b.gap_end
        ORDER BY k.id
        LIMIT 1
      ) AS next_id
    FROM big AS b
  ),
  caused AS (
    SELECT
      m.*,
      100.0 * m.busy_dur / m.dur AS busy_pct,
      CASE
        WHEN m.input_id IS NOT NULL THEN 'input'
        WHEN m.sync_id IS NOT NULL THEN 'sync'
        WHEN 100.0 * m.busy_dur / m.dur >= $busy_pct THEN 'launch'
        ELSE 'none'
      END AS cause
    FROM marked AS m
  ),
  named AS (
    SELECT
      c.*,
      k.name AS next_kernel,
      (
        SELECT l.op_name
        FROM kineto_launches AS l
        WHERE
          l.correlation = k.correlation
          AND k.correlation IS NOT NULL
        ORDER BY l.ts
        LIMIT 1
      ) AS next_op,
      (SELECT s.name FROM slice AS s WHERE s.id = c.input_id) AS input_name,
      (SELECT s.name FROM slice AS s WHERE s.id = c.sync_id) AS sync_name,
      (SELECT s.name FROM slice AS s WHERE s.id = kineto_enclosing_op!(c.sync_id, FALSE, FALSE)) AS sync_outer_op,
      (SELECT s.name FROM slice AS s WHERE s.id = kineto_enclosing_op!(c.sync_id, TRUE, FALSE)) AS sync_inner_op,
      (
        SELECT s.name
        FROM kineto_thread_track_slices AS s
        WHERE
          c.cause = 'none'
          AND s.upid = c.upid
          AND s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'python')
          AND s.ts <= c.ts + c.dur / 2
          AND s.ts + s.dur > c.ts + c.dur / 2
        ORDER BY s.depth DESC
        LIMIT 1
      ) AS py_frame
    FROM caused AS c
    LEFT JOIN kineto_kernels AS k
      ON k.id = c.next_id
  )
SELECT
  n.step,
  n.device,
  n.ts,
  n.dur,
  n.cause,
  CASE n.cause
    WHEN 'input' THEN n.input_name
    WHEN 'sync' THEN n.sync_outer_op
    WHEN 'launch' THEN n.next_op
    ELSE n.py_frame
  END AS op,
  CASE
    WHEN n.cause = 'sync'
      THEN n.sync_name || coalesce(' under ' || n.sync_inner_op, ' outside any op')
  END AS sync_call,
  round(n.busy_pct, 1) AS host_busy_pct,
  n.next_kernel,
  n.next_op,
  printf(
    'GPU %d idle %.1f us in step %d: %s',
    n.device,
    n.dur / 1e3,
    n.step,
    CASE n.cause
      WHEN 'input' THEN 'the host was fetching input (' || n.input_name || ')'
      WHEN 'sync'
        THEN 'the host waited in ' || n.sync_name
        || coalesce(' under ' || n.sync_outer_op, ' outside any op')
        || ', so the device drained (sync-forcing op)'
      WHEN 'launch'
        THEN printf(
          'the host was inside ops / runtime calls %.0f%% of the gap (launch-bound)',
          n.busy_pct
        )
      ELSE printf(
        'the host was inside ops only %.0f%% of the gap and no input or sync overlaps it (GC / GIL suspect)',
        n.busy_pct
      )
    END
  ) AS evidence
FROM named AS n
ORDER BY n.ts, n.device;
