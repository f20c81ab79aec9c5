-- version: 6
-- locked: 6 3b080092ec0caf8c
-- lib: lib.event_categories@4 lib.thread_slices@2 lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.thread_slices;

-- Name rules that give a device activity its class, lowest priority first; matched with GLOB on the
-- lower-cased name. Communication rules cover NCCL's renames (ncclKernel_*, ncclDevKernel_*, the old
-- ncclAllReduce*Kernel*), RCCL, MSCCL and Meta's ncclx; memory rules cover ROCm's blit kernels and MTIA
-- DMA. Anything unmatched is compute. Memcpy / memset activities are memory whatever their name.
CREATE OR REPLACE PERFETTO TABLE _kineto_kernel_class_rules(
  -- GLOB pattern over lower(name).
  pattern STRING,
  -- compute, communication or memory.
  class STRING,
  -- Lower wins when several rules match.
  priority LONG
) AS
WITH rules(pattern, class, priority) AS (
  VALUES
    ('*nccl*', 'communication', 1),
    ('*rccl*', 'communication', 1),
    ('*msccl*', 'communication', 1),
    ('*memcpy*', 'memory', 2),
    ('*memset*', 'memory', 2),
    ('__amd_rocclr_copy*', 'memory', 2),
    ('__amd_rocclr_fill*', 'memory', 2),
    ('dma_*', 'memory', 2)
)
SELECT
  pattern,
  class,
  priority
FROM rules;

-- The name rule class of each distinct device activity name (names are few: each is matched against the
-- rules once, not once per activity), ordered by name for the lookup by name.
CREATE OR REPLACE PERFETTO TABLE _kineto_kernel_name_classes(
  -- Activity name.
  name STRING,
  -- Class of the first matching rule, or NULL.
  name_class STRING
) AS
SELECT
  n.name,
  (
    SELECT r.class
    FROM _kineto_kernel_class_rules AS r
    WHERE
      lower(n.name) GLOB r.pattern
    ORDER BY r.priority
    LIMIT 1
  ) AS name_class
FROM (
  SELECT DISTINCT s.name
  FROM slice AS s
  JOIN kineto_event_categories AS c
    ON c.category = s.category
  WHERE
    c.event_class = 'gpu'
    AND s.name IS NOT NULL
) AS n
ORDER BY n.name;

-- By name.
CREATE OR REPLACE PERFETTO INDEX _kineto_kernel_name_classes_name ON _kineto_kernel_name_classes(name);

-- Device activities: kernels, memcpys, memsets (and MTIA ccp events), one row each. GPU user
-- annotations (ProfilerStep#N, nccl:all_reduce... copied onto a stream) are not device work and are
-- excluded. Device and stream come from `args.device` / `args.stream` (the process pid / thread tid
-- when absent), never from the thread the slice landed on.
CREATE OR REPLACE PERFETTO TABLE kineto_kernels(
  -- Slice id of the activity.
  id JOINID(slice.id),
  -- Start on the device clock, as written.
  ts TIMESTAMP,
  -- Duration.
  dur DURATION,
  -- Kernel name, or `Memcpy HtoD (Pageable -> Device)`, `Memset (Device)`...
  name STRING,
  -- Raw category: kernel, gpu_memcpy, gpu_memset, Kernel, Memcpy, Memset, mtia_ccp_events.
  category STRING,
  -- kernel, memcpy or memset.
  kind STRING,
  -- compute, communication or memory (by kind, then by the name rules).
  class STRING,
  -- Device index (`args.device`).
  device LONG,
  -- Stream (`args.stream`).
  stream LONG,
  -- Runtime correlation id (`args.correlation`): equals the launching runtime call's.
  correlation LONG,
  -- Kineto `External id` of the op that launched it.
  external_id LONG,
  -- Process the slice is on (one per device).
  upid JOINID(process.id),
  -- Arg set (grid, block, registers, bytes...), for extract_arg.
  arg_set_id ARGSETID
) AS
WITH
  acts AS (
    SELECT
      s.id,
      s.ts,
      s.dur,
      s.name,
      s.category,
      s.gpu_kind AS kind,
      coalesce(extract_arg(s.arg_set_id, 'args.device'), p.pid) AS device,
      coalesce(extract_arg(s.arg_set_id, 'args.stream'), s.tid) AS stream,
      extract_arg(s.arg_set_id, 'args.correlation') AS correlation,
      coalesce(
        extract_arg(s.arg_set_id, 'args.External id'),
        extract_arg(s.arg_set_id, 'args.external id')
      ) AS external_id,
      s.upid,
      s.arg_set_id
    FROM kineto_thread_slices AS s
    -- the pid is the device of an activity without args.device
    LEFT JOIN process AS p
      USING (upid)
    WHERE
      s.event_class = 'gpu'
  )
SELECT
  a.id,
  a.ts,
  a.dur,
  a.name,
  a.category,
  a.kind,
  CASE
    WHEN a.kind IN ('memcpy', 'memset') THEN 'memory'
    ELSE coalesce(n.name_class, 'compute')
  END AS class,
  a.device,
  a.stream,
  a.correlation,
  a.external_id,
  a.upid,
  a.arg_set_id
FROM acts AS a
LEFT JOIN _kineto_kernel_name_classes AS n
  USING (name)
ORDER BY a.ts;

-- Queries join device activities by correlation (their launch) and by id (flows): index both.
CREATE OR REPLACE PERFETTO INDEX _kineto_kernels_correlation ON kineto_kernels(correlation);

-- By id.
CREATE OR REPLACE PERFETTO INDEX _kineto_kernels_id ON kineto_kernels(id);
