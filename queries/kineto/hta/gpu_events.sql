-- id: hta.gpu_events
-- version: 3
-- kind: hta
-- title: The GPU events HTA's analyses read, with HTA's kernel type (compute / communication / memory / other)
-- source: seed 000 section 4 (HTA); research/peers.md 1.0 (HTA 0.5.0 ingest semantics)
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE
-- locked: 3 0c7b46eb6d83819a
-- lib: lib.event_categories@2 lib.interval_merge@2 lib.kernels@3

-- The cleaner default (hta_compat FALSE) keeps the whole trace (HTA silently drops the last profiler
-- step), counts only real device work (category kernel, gpu_memcpy, gpu_memset; never cuda_sync
-- slices, which HTA treats as busy GPU time), and classes names starting with nccl/rccl or containing
-- ncclKernel/ncclDevKernel as communication: the clean mode reads kineto.lib.kernels (its class rules
-- cover NCCL renames, RCCL, MSCCL, ROCm blit kernels). Every kineto.hta.* query builds on this module.

INCLUDE PERFETTO MODULE kineto.lib.interval_merge;
INCLUDE PERFETTO MODULE kineto.lib.kernels;

-- One row per slice with the fields HTA promotes to columns (stream, correlation, default -1 as in
-- HTA), whether HTA 0.5.0's last-step filter keeps it, and both kernel classifications.
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_rows(
  -- Slice id.
  id LONG,
  -- Start, ns.
  ts LONG,
  -- Duration, ns.
  dur LONG,
  -- Slice name.
  name STRING,
  -- Kineto category.
  category STRING,
  -- args.stream as HTA reads it: -1 when absent or not an integer.
  stream LONG,
  -- args.correlation, -1 when absent.
  correlation LONG,
  -- 1 when HTA's GPUKernelFilter calls it a GPU row (stream >= 0 and correlation >= 0, or Event/Context Sync).
  is_gpu_row LONG,
  -- 1 when HTA 0.5.0's default load keeps it (drops the last ProfilerStep's CPU rows and the GPU rows they launched).
  hta_kept LONG,
  -- HTA 0.5.0's get_kernel_type of the name: COMMUNICATION, MEMORY, COMPUTATION or OTHER.
  hta_type STRING,
  -- 1 for real device work: category kernel, gpu_memcpy, gpu_memset (and legacy / MTIA spellings).
  is_device_op LONG
) AS
WITH typed AS (
  SELECT
    s.id,
    s.ts,
    s.dur,
    s.name,
    s.category,
    IIF(typeof(extract_arg(s.arg_set_id, 'args.stream')) = 'integer',
        extract_arg(s.arg_set_id, 'args.stream'), -1) AS stream,
    IIF(typeof(extract_arg(s.arg_set_id, 'args.correlation')) = 'integer',
        extract_arg(s.arg_set_id, 'args.correlation'), -1) AS correlation
  FROM slice s
  WHERE s.dur >= 0
),
flagged AS (
  SELECT
    *,
    IIF((stream >= 0 AND correlation >= 0) OR name IN ('Event Sync', 'Context Sync'), 1, 0) AS is_gpu_row,
    IIF(category IN ('kernel', 'Kernel', 'gpu_memcpy', 'Memcpy', 'gpu_memset', 'Memset', 'mtia_ccp_events'), 1, 0)
      AS is_device_op
  FROM typed
),
steps AS (
  SELECT
    (SELECT COUNT(DISTINCT name) FROM flagged WHERE name GLOB '*ProfilerStep*') AS n_step_names,
    (SELECT MAX(ts) FROM flagged WHERE name GLOB '*ProfilerStep*' AND is_gpu_row = 0) AS last_step_ts
),
kept_cpu AS (
  SELECT f.id, f.correlation
  FROM flagged f, steps
  WHERE f.is_gpu_row = 0 AND (steps.n_step_names < 2 OR f.ts < steps.last_step_ts)
)
SELECT
  f.id,
  f.ts,
  f.dur,
  f.name,
  f.category,
  f.stream,
  f.correlation,
  f.is_gpu_row,
  CASE
    WHEN steps.n_step_names < 2 THEN 1
    WHEN f.is_gpu_row = 0 THEN IIF(f.ts < steps.last_step_ts, 1, 0)
    WHEN f.correlation IN (SELECT correlation FROM kept_cpu) THEN 1
    ELSE 0
  END AS hta_kept,
  CASE
    WHEN f.name GLOB 'nccl*Kernel*' THEN 'COMMUNICATION'
    WHEN f.name GLOB 'Memcpy*' OR f.name GLOB 'Memset*' OR f.name GLOB 'dma*' THEN 'MEMORY'
    WHEN f.name GLOB '*Memcpy*' OR f.name GLOB '*Sync*' THEN 'OTHER'
    ELSE 'COMPUTATION'
  END AS hta_type,
  f.is_device_op
FROM flagged f, steps;

-- The runtime calls HTA 0.5.0's analyses count as launches, by name, as HTA spells them (its own lists,
-- not kineto.lib.runtime_calls' classes: hta_compat must reproduce HTA's numbers, and HTA leaves out e.g.
-- cudaGraphLaunch and cudaLaunchCooperativeKernel).
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_launch_calls(
  -- Runtime call name.
  name STRING,
  -- 1 when HTA's cuda_kernel_launch_stats counts it (both modes).
  launch_stats LONG,
  -- 1 when kernel_launch_stats counts it outside hta_compat only (driver / HIP launches HTA misses).
  launch_stats_extra LONG,
  -- 1 when HTA's queue-length analysis counts it (both modes).
  queue_length LONG
) AS
WITH names(name, launch_stats, launch_stats_extra, queue_length) AS (
  VALUES
    ('cudaLaunchKernel', 1, 0, 1),
    ('cudaLaunchKernelExC', 1, 0, 1),
    ('runFunction - job_prep_and_submit_for_execution', 1, 0, 1),
    ('cudaMemcpyAsync', 1, 0, 1),
    ('cudaMemsetAsync', 1, 0, 1),
    ('cuLaunchKernel', 0, 1, 1),
    ('cuLaunchKernelEx', 0, 1, 1),
    ('hipLaunchKernel', 0, 1, 1),
    ('hipExtLaunchKernel', 0, 1, 0),
    ('hipExtModuleLaunchKernel', 0, 1, 1),
    ('hipModuleLaunchKernel', 0, 1, 0),
    ('hipMemcpyAsync', 0, 1, 1),
    ('hipMemsetAsync', 0, 1, 1),
    ('hipMemcpyWithStream', 0, 1, 1)
)
SELECT
  name,
  launch_stats,
  launch_stats_extra,
  queue_length
FROM names;

-- Merges possibly overlapping intervals (columns k, ts, end_ts) into disjoint ones per key k, exactly
-- like HTA's merge_kernel_intervals (touching intervals join): kineto.lib.interval_merge in HTA's columns.
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_merge(
  -- A table or subquery with columns k (group key), ts and end_ts.
  src TableOrSubquery
)
RETURNS TableOrSubquery AS
(
  SELECT k, ts, ts + dur AS end_ts
  FROM kineto_interval_merge!((SELECT k, ts, end_ts - ts AS dur FROM $src), (k))
);

-- The GPU events HTA's analyses read, one row per event, with the kernel type of the chosen mode.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_gpu_events(
  -- TRUE = HTA 0.5.0's event set (every row with args.stream != -1, sync slices included, the last
  -- ProfilerStep and GPU work launched in it dropped when there are 2+ steps) and its kernel-name rules
  -- (`^nccl.*Kernel` communication, `Stream Wait Event` counted as compute); FALSE = kernels, memcpy and
  -- memset of the whole trace classed by kineto.lib.kernels (any nccl/rccl/msccl name is communication)
  hta_compat BOOL
)
RETURNS TABLE(
  -- Slice id.
  id LONG,
  -- Start, ns.
  ts LONG,
  -- Duration, ns.
  dur LONG,
  -- End, ns.
  end_ts LONG,
  -- args.stream (-1 when absent).
  stream LONG,
  -- args.correlation (-1 when absent).
  correlation LONG,
  -- Event name.
  name STRING,
  -- Kineto category.
  category STRING,
  -- 1 for kernel / memcpy / memset categories (HTA's idle-time breakdown reads only these).
  is_device_op LONG,
  -- COMPUTATION, COMMUNICATION, MEMORY or OTHER (OTHER only in hta_compat: sync slices).
  kernel_type STRING
) AS
SELECT
  id,
  ts,
  dur,
  ts + dur AS end_ts,
  stream,
  correlation,
  name,
  category,
  is_device_op,
  hta_type AS kernel_type
FROM _kineto_hta_rows
WHERE $hta_compat AND hta_kept = 1 AND stream != -1
UNION ALL
SELECT
  k.id,
  k.ts,
  k.dur,
  k.ts + k.dur AS end_ts,
  k.stream,
  COALESCE(k.correlation, -1) AS correlation,
  k.name,
  k.category,
  1 AS is_device_op,
  CASE k.class WHEN 'compute' THEN 'COMPUTATION' WHEN 'communication' THEN 'COMMUNICATION' ELSE 'MEMORY' END
    AS kernel_type
FROM kineto_kernels k
WHERE NOT $hta_compat;
