-- id: hta.gpu_events
-- version: 7
-- kind: hta
-- title: The GPU events HTA's analyses read, with HTA's kernel type (compute / communication / memory / other)
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces; HolisticTraceAnalysis
--   (HTA 0.5.0 ingest semantics)
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE

-- The cleaner default (hta_compat FALSE) keeps the whole trace (HTA silently drops the last profiler
-- step), counts only real device work (category kernel, gpu_memcpy, gpu_memset; never cuda_sync
-- slices, which HTA treats as busy GPU time), and classes names starting with nccl/rccl or containing
-- ncclKernel/ncclDevKernel as communication: the clean mode reads kineto.lib.kernels (its class rules
-- cover NCCL renames, RCCL, MSCCL, ROCm blit kernels). Every kineto.hta.* query builds on this module.

-- Only the clean mode reads kineto.lib.kernels, yet its tables are built in hta_compat too: a module is
-- included whatever the parameter (the mode is a function argument, the include is not), and a function
-- body must name existing tables when it is created. Reading the clean events lazily instead (a macro
-- over the slices) saves the build in hta_compat (HTA-four 0.66 -> 0.57 s CPU on hta_trace_diff_control)
-- but recomputes them at each of the ~10 reads of the clean HTA-four (1.03 -> 1.34 s), the default
-- mode of `kineto-sql ranks` and of diagnose on a rank directory, where reading.rank_balance needs
-- kineto_kernels anyway.
INCLUDE PERFETTO MODULE kineto.lib.kernels;

-- HTA 0.5.0's load, read where it is cheap. HTA promotes args.stream and args.correlation to columns
-- (default -1 when absent or not an integer) and calls a row a GPU row when stream >= 0 and
-- correlation >= 0, or when it is named Event Sync / Context Sync. With two or more ProfilerStep names
-- it drops the last step: the CPU rows from the last step's start on, and the GPU rows whose correlation
-- no kept CPU row carries. The four analyses read only the rows with a stream and the CPU rows with a
-- correlation (the runtime calls), so those are the tables built here, from the two args keys (read
-- once from the args table, joined by arg set); _kineto_hta_rows, every slice, is a view for the
-- queries that read CPU ops too.

-- Integer args.stream values by arg set.
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_arg_stream(
  -- Arg set.
  arg_set_id LONG,
  -- args.stream.
  stream LONG
) AS
SELECT arg_set_id, int_value AS stream
FROM args
WHERE key = 'args.stream' AND value_type IN ('int', 'uint', 'bool', 'pointer');

-- By arg set.
CREATE OR REPLACE PERFETTO INDEX _kineto_hta_arg_stream_id ON _kineto_hta_arg_stream(arg_set_id);

-- Integer args.correlation values by arg set.
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_arg_correlation(
  -- Arg set.
  arg_set_id LONG,
  -- args.correlation.
  correlation LONG
) AS
SELECT arg_set_id, int_value AS correlation
FROM args
WHERE key = 'args.correlation' AND value_type IN ('int', 'uint', 'bool', 'pointer');

-- By arg set.
CREATE OR REPLACE PERFETTO INDEX _kineto_hta_arg_correlation_id ON _kineto_hta_arg_correlation(arg_set_id);

-- 1 when HTA's GPUKernelFilter calls a row a GPU row: stream >= 0 and correlation >= 0, or named Event Sync /
-- Context Sync.
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_is_gpu_row(
  -- args.stream, -1 when absent.
  stream Expr,
  -- args.correlation, -1 when absent.
  correlation Expr,
  -- Slice name.
  name Expr
)
RETURNS Expr AS
IIF(($stream >= 0 AND $correlation >= 0) OR $name IN ('Event Sync', 'Context Sync'), 1, 0);

-- The step rule's two numbers: distinct ProfilerStep names, and the last CPU-side one's start.
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_step_cut(
  -- Distinct names matching *ProfilerStep* (HTA drops the last step only when there are two or more).
  n_step_names LONG,
  -- Start of the last CPU-side (non-GPU-row) ProfilerStep slice.
  last_step_ts LONG
) AS
WITH marks AS (
  SELECT
    s.name,
    s.ts,
    COALESCE(st.stream, -1) AS stream,
    COALESCE(co.correlation, -1) AS correlation
  FROM slice s
  LEFT JOIN _kineto_hta_arg_stream st USING (arg_set_id)
  LEFT JOIN _kineto_hta_arg_correlation co USING (arg_set_id)
  WHERE s.name GLOB '*ProfilerStep*' AND s.dur >= 0
)
SELECT
  COUNT(DISTINCT name) AS n_step_names,
  MAX(IIF(_kineto_hta_is_gpu_row!(stream, correlation, name), NULL, ts)) AS last_step_ts
FROM marks;

-- The CPU-side rows (not GPU rows) that carry a correlation other than -1: the runtime calls that
-- launched device work (a GPU row is kept when one of them starts before the cut; idle-time reads the
-- latest one's start). Only what those two lookups read.
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_host_rows(
  -- Start, ns.
  ts LONG,
  -- args.correlation.
  correlation LONG
) AS
SELECT
  s.ts,
  co.correlation
FROM slice s
-- CROSS JOIN keeps slice the outer loop: the arg tables are indexed by arg set, slice is not.
CROSS JOIN _kineto_hta_arg_correlation co USING (arg_set_id)
LEFT JOIN _kineto_hta_arg_stream st USING (arg_set_id)
WHERE s.dur >= 0
  AND co.correlation != -1
  AND NOT (COALESCE(st.stream, -1) >= 0 AND co.correlation >= 0)
  -- Tested after the join (it names co), so only rows with a correlation read their name.
  -- (A slice without a name is no sync slice, as HTA's isin says.)
  AND IIF(co.correlation IS NULL, 0, IFNULL(s.name, '') NOT IN ('Event Sync', 'Context Sync'));

-- GPU rows are kept by their correlation, and idle-time finds a kernel's launch by it.
CREATE OR REPLACE PERFETTO INDEX _kineto_hta_host_rows_correlation ON _kineto_hta_host_rows(correlation);

-- HTA's step rule for one row (a GPU row is kept when a kept CPU row carries its correlation; CPU rows
-- with correlation -1 are nearly every op, so that case asks whether one starts before the cut).
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_kept(
  -- 1 for a GPU row.
  is_gpu_row Expr,
  -- Row start.
  ts Expr,
  -- Row correlation (-1 when absent).
  correlation Expr,
  -- _kineto_hta_step_cut.n_step_names.
  n_step_names Expr,
  -- _kineto_hta_step_cut.last_step_ts.
  last_step_ts Expr
)
RETURNS Expr AS
CASE
  WHEN $n_step_names < 2 THEN 1
  WHEN $is_gpu_row = 0 THEN IIF($ts < $last_step_ts, 1, 0)
  WHEN $correlation = -1 THEN IIF(EXISTS (
    SELECT 1
    FROM slice u
    LEFT JOIN _kineto_hta_arg_correlation uc USING (arg_set_id)
    WHERE u.dur >= 0 AND u.ts < $last_step_ts AND IFNULL(u.name, '') NOT IN ('Event Sync', 'Context Sync')
      AND COALESCE(uc.correlation, -1) = -1
  ), 1, 0)
  WHEN EXISTS (
    SELECT 1 FROM _kineto_hta_host_rows h WHERE h.correlation = $correlation AND h.ts < $last_step_ts
  ) THEN 1
  ELSE 0
END;

-- HTA 0.5.0's get_kernel_type of a name: COMMUNICATION, MEMORY, COMPUTATION or OTHER.
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_type(
  -- Slice name.
  name Expr
)
RETURNS Expr AS
CASE
  WHEN $name GLOB 'nccl*Kernel*' THEN 'COMMUNICATION'
  WHEN $name GLOB 'Memcpy*' OR $name GLOB 'Memset*' OR $name GLOB 'dma*' THEN 'MEMORY'
  WHEN $name GLOB '*Memcpy*' OR $name GLOB '*Sync*' THEN 'OTHER'
  ELSE 'COMPUTATION'
END;

-- 1 for real device work by HTA's category list: kernel, gpu_memcpy, gpu_memset (legacy / MTIA spellings).
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_is_device_op(
  -- Kineto category.
  category Expr
)
RETURNS Expr AS
IIF($category IN ('kernel', 'Kernel', 'gpu_memcpy', 'Memcpy', 'gpu_memset', 'Memset', 'mtia_ccp_events'), 1, 0);

-- HTA's columns of rows that carry id, ts, dur, name, category, stream, correlation (-1 when absent) and
-- is_gpu_row: whether its step rule keeps the row, its kernel type, whether it is real device work. Inline
-- (a macro), so the caller's scan and filters stay one query.
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_columns(
  -- Table or subquery with columns id, ts, dur, name, category, stream, correlation, is_gpu_row.
  flagged TableOrSubquery
)
RETURNS TableOrSubquery AS
(
  SELECT
    f.id,
    f.ts,
    f.dur,
    f.ts + f.dur AS end_ts,
    f.name,
    f.category,
    f.stream,
    f.correlation,
    f.is_gpu_row,
    _kineto_hta_kept!(f.is_gpu_row, f.ts, f.correlation, c.n_step_names, c.last_step_ts) AS hta_kept,
    _kineto_hta_type!(f.name) AS hta_type,
    _kineto_hta_is_device_op!(f.category) AS is_device_op
  FROM $flagged f, _kineto_hta_step_cut c
);

-- One row per slice with args.stream other than -1 (kernels, memcpy, memset, sync slices...), with
-- HTA's columns, whether its step rule keeps the row and its kernel type.
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_stream_rows(
  -- Slice id.
  id LONG,
  -- Start, ns.
  ts LONG,
  -- Duration, ns.
  dur LONG,
  -- End, ns.
  end_ts LONG,
  -- Slice name.
  name STRING,
  -- Kineto category.
  category STRING,
  -- args.stream.
  stream LONG,
  -- args.correlation, -1 when absent or not an integer.
  correlation LONG,
  -- 1 when HTA's GPUKernelFilter calls it a GPU row (stream >= 0 and correlation >= 0, or Event/Context Sync).
  is_gpu_row LONG,
  -- 1 when HTA 0.5.0's default load keeps it.
  hta_kept LONG,
  -- HTA 0.5.0's get_kernel_type of the name: COMMUNICATION, MEMORY, COMPUTATION or OTHER.
  hta_type STRING,
  -- 1 for real device work: category kernel, gpu_memcpy, gpu_memset (and legacy / MTIA spellings).
  is_device_op LONG
) AS
SELECT *
FROM _kineto_hta_columns!((
  SELECT
    s.id,
    s.ts,
    s.dur,
    s.name,
    s.category,
    st.stream,
    COALESCE(co.correlation, -1) AS correlation,
    _kineto_hta_is_gpu_row!(st.stream, COALESCE(co.correlation, -1), s.name) AS is_gpu_row
  FROM slice s
  -- CROSS JOIN keeps slice the outer loop: the arg tables are indexed by arg set, slice is not.
  CROSS JOIN _kineto_hta_arg_stream st USING (arg_set_id)
  LEFT JOIN _kineto_hta_arg_correlation co USING (arg_set_id)
  WHERE s.dur >= 0 AND st.stream != -1
));

-- Every slice with HTA's columns (the same rules as _kineto_hta_stream_rows), for the queries that read
-- CPU ops as well (op_summary, queue_length's span). A view: the four analyses never scan it.
CREATE OR REPLACE PERFETTO VIEW _kineto_hta_rows(
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
SELECT id, ts, dur, name, category, stream, correlation, is_gpu_row, hta_kept, hta_type, is_device_op
FROM _kineto_hta_columns!((
  SELECT
    s.id,
    s.ts,
    s.dur,
    s.name,
    s.category,
    COALESCE(st.stream, -1) AS stream,
    COALESCE(co.correlation, -1) AS correlation,
    _kineto_hta_is_gpu_row!(COALESCE(st.stream, -1), COALESCE(co.correlation, -1), s.name) AS is_gpu_row
  FROM slice s
  LEFT JOIN _kineto_hta_arg_stream st USING (arg_set_id)
  LEFT JOIN _kineto_hta_arg_correlation co USING (arg_set_id)
  WHERE s.dur >= 0
));

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

-- The GPU events of one mode, inline (a macro, so the caller's filters and columns reach the scan; a
-- table function would copy every row out first): the body of kineto_hta_gpu_events.
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_events(
  -- TRUE = HTA 0.5.0's event set and name rules; FALSE = kineto.lib.kernels' device work and classes.
  hta_compat Expr
)
RETURNS TableOrSubquery AS
(
  SELECT
    id,
    ts,
    dur,
    end_ts,
    stream,
    correlation,
    name,
    category,
    is_device_op,
    hta_type AS kernel_type
  FROM _kineto_hta_stream_rows
  WHERE $hta_compat AND hta_kept = 1
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
  WHERE NOT $hta_compat
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
  end_ts,
  stream,
  correlation,
  name,
  category,
  is_device_op,
  kernel_type
FROM _kineto_hta_events!($hta_compat);

-- GPU time by the exact set of kernel types running, from events with columns kernel_type, ts and end_ts:
-- state is a bit set (1 COMPUTATION, 2 COMMUNICATION, 4 MEMORY, 8 OTHER), dur_ns the time spent in
-- it. One sweep over the events' starts and ends with a running count per type (the time in any
-- union or intersection of types is then a sum of states: what the temporal, overlap and kernel-type
-- breakdowns read). Touching or zero-length events add no time, as in HTA's merged intervals.
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_states(
  -- Table or subquery with columns kernel_type, ts, end_ts.
  src TableOrSubquery
)
RETURNS TableOrSubquery AS
(
  SELECT state, SUM(next_t - t) AS dur_ns
  FROM (
    SELECT
      t,
      IIF(SUM(d_comp) OVER w > 0, 1, 0) + IIF(SUM(d_comm) OVER w > 0, 2, 0) + IIF(SUM(d_mem) OVER w > 0, 4, 0)
        + IIF(SUM(d_other) OVER w > 0, 8, 0) AS state,
      LEAD(t) OVER w AS next_t
    FROM (
      SELECT
        ts AS t,
        1 AS is_start,
        IIF(kernel_type = 'COMPUTATION', 1, 0) AS d_comp,
        IIF(kernel_type = 'COMMUNICATION', 1, 0) AS d_comm,
        IIF(kernel_type = 'MEMORY', 1, 0) AS d_mem,
        IIF(kernel_type = 'OTHER', 1, 0) AS d_other
      FROM $src
      UNION ALL
      SELECT
        end_ts AS t,
        0 AS is_start,
        -IIF(kernel_type = 'COMPUTATION', 1, 0) AS d_comp,
        -IIF(kernel_type = 'COMMUNICATION', 1, 0) AS d_comm,
        -IIF(kernel_type = 'MEMORY', 1, 0) AS d_mem,
        -IIF(kernel_type = 'OTHER', 1, 0) AS d_other
      FROM $src
    )
    WINDOW w AS (ORDER BY t, is_start ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
  )
  WHERE state > 0 AND next_t IS NOT NULL
  GROUP BY state
);

-- _kineto_hta_states of HTA 0.5.0's event set, built once for the analyses that read it.
CREATE OR REPLACE PERFETTO TABLE _kineto_hta_compat_states(
  -- Bit set of the kernel types running (1 COMPUTATION, 2 COMMUNICATION, 4 MEMORY, 8 OTHER).
  state LONG,
  -- Time in exactly this set, ns.
  dur_ns LONG
) AS
SELECT state, dur_ns
FROM _kineto_hta_states!((SELECT kernel_type, ts, end_ts FROM _kineto_hta_events!(TRUE)));

-- The busy states (_kineto_hta_states) of one mode: hta_compat reads the table built once above, the clean
-- mode sweeps kineto.lib.kernels' events. What the temporal, overlap and kernel-type breakdowns read.
CREATE OR REPLACE PERFETTO MACRO _kineto_hta_mode_states(
  -- TRUE = HTA 0.5.0's event set; FALSE = kineto.lib.kernels' device work.
  hta_compat Expr
)
RETURNS TableOrSubquery AS
(
  SELECT state, dur_ns FROM _kineto_hta_compat_states WHERE $hta_compat
  UNION ALL
  SELECT state, dur_ns
  FROM _kineto_hta_states!((SELECT kernel_type, ts, end_ts FROM _kineto_hta_events!(FALSE)))
  WHERE NOT $hta_compat
);
