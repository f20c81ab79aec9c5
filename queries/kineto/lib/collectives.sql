-- version: 1
-- locked: 1 bded027b34c1b27e
-- lib: lib.cpu_ops@4 lib.event_categories@2 lib.host_slices@8 lib.host_tree@3 lib.kernels@5 lib.launches@5
--   lib.runtime_calls@4 lib.steps@9 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;

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
  step LONG
) AS
WITH
  gpu AS (
    SELECT k.id, k.ts, k.dur, k.name, 'kernel' AS source, k.device, l.step
    FROM kineto_kernels AS k
    LEFT JOIN kineto_launches AS l
      ON l.correlation = k.correlation
    WHERE
      k.class = 'communication'
  ),
  gloo AS (
    SELECT o.id, o.ts, o.dur, o.name, 'cpu' AS source, NULL AS device, o.step
    FROM kineto_cpu_ops AS o
    WHERE
      o.name GLOB 'gloo:*'
      AND NOT EXISTS (SELECT 1 FROM gpu)
  ),
  sync_ops AS (
    SELECT o.id, o.ts, o.dur, o.name, 'cpu' AS source, NULL AS device, o.step
    FROM kineto_cpu_ops AS o
    WHERE
      (o.name GLOB 'c10d::*_' OR o.name GLOB 'nccl:*' OR o.name = 'record_param_comms')
      AND NOT EXISTS (SELECT 1 FROM gpu)
      AND NOT EXISTS (SELECT 1 FROM gloo)
      AND NOT EXISTS (
        SELECT 1
        FROM kineto_cpu_ops AS p
        WHERE
          p.id = o.parent_id
          AND (p.name GLOB 'c10d::*_' OR p.name GLOB 'nccl:*' OR p.name = 'record_param_comms')
      )
  )
SELECT id, ts, dur, name, source, device, step FROM gpu
UNION ALL
SELECT id, ts, dur, name, source, device, step FROM gloo
UNION ALL
SELECT id, ts, dur, name, source, device, step FROM sync_ops;
