-- version: 4

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.host_tree;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;
INCLUDE PERFETTO MODULE kineto.lib.collective_kind;

-- The nccl:<collective> annotations Kineto copies onto a GPU stream (gpu_user_annotation): they hold the
-- kernels of that call, the only name of a collective an RCCL generic kernel has.
CREATE OR REPLACE PERFETTO TABLE _kineto_collectives_stream_annotations(
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Device (the GPU's pid).
  device LONG,
  -- Stream (tid).
  stream LONG,
  -- `External id` arg: the host nccl: annotation's.
  ext LONG,
  -- all_reduce, broadcast...: what the annotation names.
  collective STRING
) AS
SELECT s.ts, s.dur, p.pid AS device, s.tid AS stream, extract_arg(s.arg_set_id, 'args.External id') AS ext,
  kineto_collective_kind(substr(s.name, 6)) AS collective
FROM kineto_thread_track_slices AS s
LEFT JOIN process AS p
  USING (upid)
WHERE
  s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'gpu_annotation')
  AND s.name GLOB 'nccl:*';

-- The host ops (kineto.lib.cpu_ops' rows: host slices of class cpu_op) that can be collective work items,
-- with their parent in torch's tree, in kineto_cpu_ops' order (start, then id). Read from the shared host
-- tables rather than kineto_cpu_ops: a GPU trace then builds no per-op table for its few host candidates.
CREATE OR REPLACE PERFETTO TABLE _kineto_collectives_host_ops(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Op name.
  name STRING,
  -- Direct parent in torch's tree (kineto_cpu_ops.parent_id), or NULL.
  parent_id LONG,
  -- Step (kineto_cpu_ops.step).
  step LONG,
  -- `gloo` (gloo's own work items) or `sync` (the c10d / nccl / record_param_comms ops of a synchronous
  -- backend): the name patterns are written here only.
  kind STRING
) AS
SELECT h.id, h.ts, h.dur, h.name, t.parent_id, h.step, h.kind
-- one branch per pattern: a lone GLOB or = on the table is filtered by the engine, an OR of them by SQLite
-- row by row (ten times the cost); the patterns never match the same name
FROM (
  SELECT id, ts, dur, name, step, 'gloo' AS kind
  FROM kineto_host_slices
  WHERE event_class = 'cpu_op' AND name GLOB 'gloo:*'
  UNION ALL
  SELECT id, ts, dur, name, step, 'sync' FROM kineto_host_slices WHERE event_class = 'cpu_op' AND name GLOB 'c10d::*_'
  UNION ALL
  SELECT id, ts, dur, name, step, 'sync' FROM kineto_host_slices WHERE event_class = 'cpu_op' AND name GLOB 'nccl:*'
  UNION ALL
  SELECT id, ts, dur, name, step, 'sync'
  FROM kineto_host_slices
  WHERE event_class = 'cpu_op' AND name = 'record_param_comms'
) AS h
CROSS JOIN kineto_host_tree AS t
  ON t.id = h.id
ORDER BY h.ts, h.id;

-- The parent check below looks ops up by id.
CREATE OR REPLACE PERFETTO INDEX _kineto_collectives_host_ops_id ON _kineto_collectives_host_ops(id);

-- Collective communication work, one row per piece: communication kernels (NCCL / RCCL / MSCCL, class
-- `communication` in kineto.lib.kernels) on GPU traces, and on traces without them the host-side
-- collective work items: gloo's `gloo:<collective>` ops (they run on gloo's own threads for the whole
-- time the collective waits and transfers), else the `c10d::<collective>_` / `nccl:<collective>` /
-- `record_param_comms` ops of a synchronous backend.
CREATE OR REPLACE PERFETTO TABLE kineto_collectives(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Kernel or op name.
  name STRING,
  -- `kernel` or `cpu`.
  source STRING,
  -- Device of a kernel; NULL for cpu work.
  device LONG,
  -- Step number: of the launching call for kernels, of the window holding the start for cpu work.
  step LONG,
  -- all_reduce, all_gather, broadcast... (kineto_collective_kind): by the kernel's or op's name, else (RCCL's
  -- generic kernel) by the nccl: annotation on its stream that holds it; NULL when nothing names it.
  collective STRING
) AS
WITH
  comm AS (
    SELECT k.id, k.ts, k.dur, k.name, k.device, k.stream, k.correlation
    FROM kineto_kernels AS k
    WHERE
      k.class = 'communication'
  ),
  -- the latest stream annotation started at or before each kernel on its stream: one sort of both, not a
  -- search of every annotation per kernel (an RCCL trace has one of each per call)
  marks AS (
    SELECT device, stream, ts, 0 AS is_kernel, NULL AS id FROM _kineto_collectives_stream_annotations
    UNION ALL
    SELECT device, stream, ts, 1, id FROM comm
  ),
  latest AS (
    SELECT id,
      max(IIF(is_kernel = 0, ts, NULL)) OVER (
        PARTITION BY device, stream ORDER BY ts, is_kernel ROWS UNBOUNDED PRECEDING
      ) AS ann_ts
    FROM marks
  ),
  held AS (
    SELECT l.id, max(a.collective) AS collective
    FROM latest AS l
    JOIN comm AS k
      USING (id)
    JOIN _kineto_collectives_stream_annotations AS a
      ON a.device = k.device AND a.stream = k.stream AND a.ts = l.ann_ts AND k.ts < a.ts + a.dur
    WHERE
      l.id IS NOT NULL
    GROUP BY l.id
  ),
  gpu AS (
    SELECT k.id, k.ts, k.dur, k.name, 'kernel' AS source, k.device, l.step,
      coalesce(kineto_collective_kind(k.name), h.collective) AS collective
    FROM comm AS k
    LEFT JOIN kineto_launches AS l
      ON l.correlation = k.correlation
    LEFT JOIN held AS h
      USING (id)
  ),
  gloo AS (
    SELECT o.id, o.ts, o.dur, o.name, 'cpu' AS source, NULL AS device, o.step
    FROM _kineto_collectives_host_ops AS o
    WHERE
      o.kind = 'gloo'
      AND NOT EXISTS (SELECT 1 FROM gpu)
  ),
  sync_ops AS (
    SELECT o.id, o.ts, o.dur, o.name, 'cpu' AS source, NULL AS device, o.step
    FROM _kineto_collectives_host_ops AS o
    WHERE
      o.kind = 'sync'
      AND NOT EXISTS (SELECT 1 FROM gpu)
      AND NOT EXISTS (SELECT 1 FROM gloo)
      AND NOT EXISTS (
        SELECT 1
        FROM _kineto_collectives_host_ops AS p
        WHERE
          p.id = o.parent_id
          AND p.kind = 'sync'
      )
  )
SELECT id, ts, dur, name, source, device, step, collective FROM gpu
UNION ALL
SELECT id, ts, dur, name, source, device, step, kineto_collective_kind(name) FROM gloo
UNION ALL
SELECT id, ts, dur, name, source, device, step,
  coalesce(
    kineto_collective_kind(name),
    kineto_collective_kind(extract_arg((SELECT s.arg_set_id FROM slice AS s WHERE s.id = sync_ops.id), 'args.Collective name'))
  )
FROM sync_ops;
