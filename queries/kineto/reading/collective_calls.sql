-- id: reading.collective_calls
-- version: 5
-- kind: reading
-- title: Collective calls of one rank: collective, process group, sequence number, time and message sizes
-- references: nccl-tests PERFORMANCE.md (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)
--   (what a size means per op)
-- needs: none
-- status: stable
-- default device_name: ''

-- One row per collective call, the unit that `kineto-sql collectives DIR` (queries/fleet/call_match.sql)
-- matches across ranks by (step, process group, collective, seq): NCCL requires every rank of a group to
-- issue the group's collectives in the same order, so the n-th all_reduce of a group in a step is the
-- same call everywhere.
-- A call is what one NCCL annotation (`nccl:<collective>`, else record_param_comms) launched (RCCL
-- kernels without a launch: the annotation whose on-stream copy holds the kernel), or one
-- communication kernel without either; on gloo, one `gloo:<collective>` op (kineto.lib.collectives).
-- Sizes, newest source first: the kernel's own args (Kineto >= 2.4: `In msg nelems`, `dtype`...), the
-- record_param_comms args, then the `Input Dims` / `Input type` of the nccl: / gloo: annotation (older
-- traces; one tensor, taken as the input). in_bytes / out_bytes are per rank; what size the bandwidth
-- formulas use per collective is decided in queries/fleet/collective_skew.sql (nccl-tests' conventions).
-- ts / dur: first kernel start to last kernel end on the device (gloo: the op on gloo's thread), on this
-- rank's clock as written; add kineto_metadata's kineto_sql.ts_offset_ns to compare ranks.

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.collectives;
INCLUDE PERFETTO MODULE kineto.lib.collective_kind;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.dtypes;
INCLUDE PERFETTO MODULE kineto.lib.device_specs;
INCLUDE PERFETTO MODULE kineto.lib.thread_track_slices;

-- One row per collective call of this rank.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_collective_calls(
  -- deviceProperties name of the GPU, for link_gbps; empty: kineto-sql fills it from the trace's
  -- deviceProperties (in the Perfetto UI, write it in).
  device_name STRING
)
RETURNS TABLE(
  -- Slice id of the call: the nccl: / gloo: annotation, else record_param_comms, else the kernel.
  call_id LONG,
  -- ProfilerStep number, or NULL outside steps.
  step LONG,
  -- Process group name (`Process Group Name` arg), '' when the trace does not say.
  pg STRING,
  -- all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv, barrier... or unknown.
  collective STRING,
  -- 1-based order of this call among the same (step, pg, collective) calls of this rank.
  seq LONG,
  -- First kernel start (gloo: op start).
  ts TIMESTAMP,
  -- First kernel start to last kernel end (gloo: the op).
  dur DURATION,
  -- Summed device time of its kernels (gloo: the op).
  busy_dur DURATION,
  -- Communication kernels (0 for gloo).
  kernels LONG,
  -- Input message bytes on this rank.
  in_bytes LONG,
  -- Output message bytes on this rank, NULL when not recorded.
  out_bytes LONG,
  -- Element type as written.
  dtype STRING,
  -- `Group size` arg, NULL when not recorded.
  group_size LONG,
  -- `In split size` arg (all_to_allv: elements sent to each rank), JSON text or NULL.
  in_split STRING,
  -- `Out split size` arg, JSON text or NULL.
  out_split STRING,
  -- kernel or cpu (gloo / synchronous backend).
  source STRING,
  -- Name of the annotation or kernel.
  name STRING,
  -- Scale-up link bandwidth of this GPU model, one direction, GB/s (kineto.lib.device_specs), or NULL.
  link_gbps DOUBLE
) AS
WITH
  comm_kernels AS (
    SELECT k.id, k.ts, k.dur, k.name, k.correlation, k.arg_set_id, k.device, k.stream
    FROM kineto_kernels AS k
    WHERE
      k.class = 'communication'
  ),
  comm_launches AS (
    SELECT l.correlation, l.op_id, l.step
    FROM kineto_launches AS l
    WHERE
      l.correlation IN (SELECT correlation FROM comm_kernels)
      AND l.op_id IS NOT NULL
  ),
  -- The launching op and its ancestors, nearest first, for the annotation and record_param_comms.
  lineage AS (
    SELECT l.correlation, s.id, s.name, s.depth, s.arg_set_id
    FROM comm_launches AS l
    JOIN slice AS s
      ON s.id = l.op_id
    UNION ALL
    SELECT l.correlation, a.id, a.name, a.depth, a.arg_set_id
    FROM comm_launches AS l
    CROSS JOIN ancestor_slice(l.op_id) AS a
  ),
  annotation AS (
    SELECT correlation, id, arg_set_id
    FROM (
      SELECT correlation, id, arg_set_id, row_number() OVER (PARTITION BY correlation ORDER BY depth DESC) AS rn
      FROM lineage
      WHERE
        name GLOB 'nccl:*'
    )
    WHERE
      rn = 1
  ),
  param_comms AS (
    SELECT correlation, id, arg_set_id
    FROM (
      SELECT correlation, id, arg_set_id, row_number() OVER (PARTITION BY correlation ORDER BY depth DESC) AS rn
      FROM lineage
      WHERE
        name = 'record_param_comms'
    )
    WHERE
      rn = 1
  ),
  -- Kernels no launch links to (ROCm's RCCL kernels carry no launch correlation): the nccl: annotation
  -- Kineto copies onto the kernel's stream (gpu_user_annotation) holds the kernel, and its External id
  -- is the host nccl: annotation's.
  host_annotations AS (
    SELECT s.id, s.arg_set_id, extract_arg(s.arg_set_id, 'args.External id') AS ext
    FROM slice AS s
    WHERE
      s.category IN (
        SELECT category FROM kineto_event_categories WHERE event_class = 'cpu_op' AND is_annotation
      )
      AND s.name GLOB 'nccl:*'
  ),
  by_stream AS (
    SELECT k.id AS kernel_id, h.id, h.arg_set_id
    FROM comm_kernels AS k
    JOIN _kineto_collectives_stream_annotations AS g
      ON g.device = k.device AND g.stream = k.stream AND k.ts >= g.ts AND k.ts < g.ts + g.dur
    JOIN host_annotations AS h
      ON h.ext = g.ext
    WHERE
      k.correlation NOT IN (SELECT correlation FROM annotation)
  ),
  gpu_pieces AS (
    SELECT
      coalesce(a.id, b.id, p.id, k.id) AS call_id,
      cl.step,
      k.ts,
      k.dur,
      k.name AS kernel_name,
      coalesce(
        extract_arg(k.arg_set_id, 'args.Process Group Name'),
        extract_arg(p.arg_set_id, 'args.Process Group Name'),
        ''
      ) AS pg,
      coalesce(
        extract_arg(k.arg_set_id, 'args.Collective name'),
        extract_arg(p.arg_set_id, 'args.Collective name'),
        (SELECT substr(s.name, 6) FROM slice AS s WHERE s.id = coalesce(a.id, b.id)),
        k.name
      ) AS coll_text,
      coalesce(extract_arg(k.arg_set_id, 'args.In msg nelems'), extract_arg(p.arg_set_id, 'args.In msg nelems'))
        AS in_nelems,
      coalesce(extract_arg(k.arg_set_id, 'args.Out msg nelems'), extract_arg(p.arg_set_id, 'args.Out msg nelems'))
        AS out_nelems,
      coalesce(extract_arg(k.arg_set_id, 'args.dtype'), extract_arg(p.arg_set_id, 'args.dtype')) AS arg_dtype,
      coalesce(extract_arg(k.arg_set_id, 'args.Group size'), extract_arg(p.arg_set_id, 'args.Group size'))
        AS group_size,
      coalesce(extract_arg(k.arg_set_id, 'args.In split size'), extract_arg(p.arg_set_id, 'args.In split size'))
        AS in_split,
      coalesce(extract_arg(k.arg_set_id, 'args.Out split size'), extract_arg(p.arg_set_id, 'args.Out split size'))
        AS out_split,
      coalesce(a.arg_set_id, b.arg_set_id) AS ann_args,
      'kernel' AS source
    FROM comm_kernels AS k
    LEFT JOIN comm_launches AS cl
      USING (correlation)
    LEFT JOIN annotation AS a
      USING (correlation)
    LEFT JOIN param_comms AS p
      USING (correlation)
    LEFT JOIN by_stream AS b
      ON b.kernel_id = k.id
  ),
  cpu_pieces AS (
    SELECT
      c.id AS call_id,
      c.step,
      c.ts,
      c.dur,
      c.name AS kernel_name,
      coalesce(extract_arg(s.arg_set_id, 'args.Process Group Name'), '') AS pg,
      coalesce(extract_arg(s.arg_set_id, 'args.Collective name'), c.name) AS coll_text,
      extract_arg(s.arg_set_id, 'args.In msg nelems') AS in_nelems,
      extract_arg(s.arg_set_id, 'args.Out msg nelems') AS out_nelems,
      extract_arg(s.arg_set_id, 'args.dtype') AS arg_dtype,
      extract_arg(s.arg_set_id, 'args.Group size') AS group_size,
      extract_arg(s.arg_set_id, 'args.In split size') AS in_split,
      extract_arg(s.arg_set_id, 'args.Out split size') AS out_split,
      s.arg_set_id AS ann_args,
      'cpu' AS source
    FROM kineto_collectives AS c
    JOIN slice AS s
      USING (id)
    WHERE
      c.source = 'cpu'
  ),
  pieces AS (
    SELECT * FROM gpu_pieces
    UNION ALL
    SELECT * FROM cpu_pieces
  ),
  calls AS (
    SELECT
      call_id,
      min(step) AS step,
      max(pg) AS pg,
      max(coll_text) AS coll_text,
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS dur,
      sum(dur) AS busy_dur,
      IIF(max(source) = 'kernel', count(*), 0) AS kernels,
      max(in_nelems) AS in_nelems,
      max(out_nelems) AS out_nelems,
      max(arg_dtype) AS arg_dtype,
      max(group_size) AS group_size,
      max(in_split) AS in_split,
      max(out_split) AS out_split,
      max(ann_args) AS ann_args,
      max(source) AS source,
      max(kernel_name) AS kernel_name
    FROM pieces
    GROUP BY call_id
  ),
  sized AS (
    SELECT
      c.*,
      coalesce(c.arg_dtype, extract_arg(c.ann_args, 'args.Input type[0]')) AS dtype,
      kineto_collective_kind(c.coll_text) AS collective,
      -- The annotation's first tensor (Input Dims[0], or [0][0] for a TensorList), as elements.
      coalesce(
        extract_arg(c.ann_args, 'args.Input Dims[0][0]'),
        extract_arg(c.ann_args, 'args.Input Dims[0][0][0]')
      )
      * coalesce(extract_arg(c.ann_args, 'args.Input Dims[0][1]'), 1)
      * coalesce(extract_arg(c.ann_args, 'args.Input Dims[0][2]'), 1)
      * coalesce(extract_arg(c.ann_args, 'args.Input Dims[0][3]'), 1)
      * coalesce(extract_arg(c.ann_args, 'args.Input Dims[0][0][1]'), 1) AS ann_nelems
    FROM calls AS c
  )
SELECT
  s.call_id,
  s.step,
  s.pg,
  coalesce(s.collective, 'unknown') AS collective,
  row_number() OVER (PARTITION BY s.step, s.pg, coalesce(s.collective, 'unknown') ORDER BY s.ts, s.call_id) AS seq,
  s.ts,
  s.dur,
  s.busy_dur,
  s.kernels,
  coalesce(s.in_nelems, s.ann_nelems) * d.bytes AS in_bytes,
  s.out_nelems * d.bytes AS out_bytes,
  s.dtype,
  s.group_size,
  s.in_split,
  s.out_split,
  s.source,
  s.kernel_name AS name,
  (SELECT link_gbps FROM _kineto_device_spec_for($device_name)) AS link_gbps
FROM sized AS s
LEFT JOIN kineto_dtypes AS d
  ON d.type = s.dtype
ORDER BY s.ts, s.call_id;
