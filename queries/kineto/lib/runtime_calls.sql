-- version: 4
-- locked: 4 8448b528afd4a712
-- lib: lib.event_categories@4 lib.host_slices@8 lib.kernels@6 lib.steps@9 lib.thread_slices@2
--   lib.thread_track_slices@1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;
INCLUDE PERFETTO MODULE kineto.lib.kernels;

-- The one rule table that says what a CUDA / HIP / MTIA runtime or driver call does to the host. Matched
-- with GLOB on the exact name, lowest priority first; a call no rule matches is `other`.
--
-- Classes and why:
-- * `launch`: puts kernels on a stream and returns (cudaLaunchKernel*, cuLaunchKernel*, cudaGraphLaunch,
--   hip*LaunchKernel, hipGraphLaunch, MTIA's job submit). Its host time is issue overhead.
-- * `stream_sync` / `device_sync` / `event_sync`: the host blocks until the stream / device / event is done
--   (cudaStreamSynchronize, cudaDeviceSynchronize, cuCtxSynchronize, cudaEventSynchronize, hip alike).
--   cudaStreamWaitEvent is a device-side wait (the host returns at once) and cudaEventQuery /
--   cudaStreamQuery poll without blocking: both are `other`.
-- * `blocking_copy`: a copy or set the host waits for (cudaMemcpy, cudaMemcpy2D, cudaMemcpyToSymbol,
--   cuMemcpyDtoH / HtoD without Async, hipMemcpy, hipMemcpyWithStream, cudaMemset): the CUDA runtime
--   docs ("API synchronization behavior") say these return after the transfer.
-- * `async_copy`: cudaMemcpyAsync / cudaMemsetAsync and kin. These are asynchronous only between device
--   memory and pinned host memory; `kineto_runtime_calls` upgrades one to `blocking_copy` per call (see
--   there), because a DtoH copy into pageable memory returns only after the copy completed, and a pageable
--   HtoD copy first synchronizes the stream (same docs).
-- * `malloc` / `free`: device or pinned allocation (cudaMalloc*, cudaHostAlloc, cuMemAlloc*, cuMemCreate,
--   hipMalloc*, hipHostMalloc; cudaFree*, cuMemFree*, hipFree*). cudaFree also synchronizes the device,
--   which is why a free-heavy step (no caching allocator) stalls.
-- * `occupancy_query`: cudaOccupancy* / cuOccupancy* / hipOccupancy*: the launch heuristics of
--   adaptively launched kernels (cuBLAS / cuDNN GEMM and convolution); pure host cost.
-- * `attribute_query`: cudaFuncGetAttributes / hipFuncGetAttributes: an attribute getter some libraries
--   (cuBLAS) issue before launches; host cost, but not a sign of an adaptive launch.
-- * `module_load`: loading a module / library of device code (cuModuleLoad*, cuLibraryLoad*,
--   hipModuleLoad*): lazy loading puts these in the first iteration that runs a kernel; cold-start work.
-- * `profiler_flush`: calls the profiler itself makes (CUPTI activity flush); the final device synchronize
--   of a capture is judged in context by guide.profiler_flush_sync, not by name.
-- * `other`: everything else (event record / query, stream capture queries, attribute getters, INVALID).
CREATE OR REPLACE PERFETTO TABLE _kineto_runtime_call_rules(
  -- GLOB pattern over the exact call name.
  pattern STRING,
  -- launch, stream_sync, device_sync, event_sync, blocking_copy, async_copy, malloc, free,
  -- occupancy_query, attribute_query, module_load, profiler_flush or other.
  class STRING,
  -- Lower wins when several rules match.
  priority LONG
) AS
WITH rules(pattern, class, priority) AS (
  VALUES
    -- exact names first: they beat the prefix patterns below
    ('cudaMemcpy', 'blocking_copy', 1),
    ('cudaMemcpy2D', 'blocking_copy', 1),
    ('cudaMemcpy3D', 'blocking_copy', 1),
    ('cudaMemcpyPeer', 'blocking_copy', 1),
    ('cudaMemcpyToSymbol', 'blocking_copy', 1),
    ('cudaMemcpyFromSymbol', 'blocking_copy', 1),
    ('cudaMemset', 'blocking_copy', 1),
    ('cudaMemset2D', 'blocking_copy', 1),
    ('hipMemcpy', 'blocking_copy', 1),
    ('hipMemcpy2D', 'blocking_copy', 1),
    ('hipMemcpyWithStream', 'blocking_copy', 1),
    ('hipMemcpyDtoH', 'blocking_copy', 1),
    ('hipMemcpyHtoD', 'blocking_copy', 1),
    ('hipMemcpyDtoD', 'blocking_copy', 1),
    ('hipMemset', 'blocking_copy', 1),
    ('cuMemcpy', 'blocking_copy', 1),
    ('cuMemcpyDtoH*', 'blocking_copy', 2),
    ('cuMemcpyHtoD*', 'blocking_copy', 2),
    ('cuMemcpyDtoD*', 'blocking_copy', 2),
    ('cuMemcpy2D*', 'blocking_copy', 2),
    ('cu*Memcpy*Async*', 'async_copy', 1),
    ('cuda*Memcpy*Async*', 'async_copy', 1),
    ('cuda*Memset*Async*', 'async_copy', 1),
    ('cuMemset*Async*', 'async_copy', 1),
    ('hip*Memcpy*Async*', 'async_copy', 1),
    ('hip*Memset*Async*', 'async_copy', 1),
    ('cudaStreamSynchronize*', 'stream_sync', 1),
    ('cuStreamSynchronize*', 'stream_sync', 1),
    ('hipStreamSynchronize*', 'stream_sync', 1),
    ('cudaDeviceSynchronize*', 'device_sync', 1),
    ('cudaThreadSynchronize*', 'device_sync', 1),
    ('cuCtxSynchronize*', 'device_sync', 1),
    ('hipDeviceSynchronize*', 'device_sync', 1),
    ('cudaEventSynchronize*', 'event_sync', 1),
    ('cuEventSynchronize*', 'event_sync', 1),
    ('hipEventSynchronize*', 'event_sync', 1),
    ('cudaLaunch*', 'launch', 3),
    ('cuLaunch*', 'launch', 3),
    ('cudaGraphLaunch*', 'launch', 2),
    ('cuGraphLaunch*', 'launch', 2),
    ('hipGraphLaunch*', 'launch', 2),
    ('hip*LaunchKernel*', 'launch', 3),
    ('hipLaunch*', 'launch', 3),
    ('runFunction*', 'launch', 3),
    ('cudaMalloc*', 'malloc', 2),
    ('cudaHostAlloc*', 'malloc', 2),
    ('cuMemAlloc*', 'malloc', 2),
    ('cuMemCreate*', 'malloc', 2),
    ('cuMemHostAlloc*', 'malloc', 2),
    ('hipMalloc*', 'malloc', 2),
    ('hipHostMalloc*', 'malloc', 2),
    ('hipExtMalloc*', 'malloc', 2),
    ('cudaFree*', 'free', 2),
    ('cuMemFree*', 'free', 2),
    ('cuMemRelease*', 'free', 2),
    ('hipFree*', 'free', 2),
    ('hipHostFree*', 'free', 2),
    ('cudaOccupancy*', 'occupancy_query', 2),
    ('cuOccupancy*', 'occupancy_query', 2),
    ('hipOccupancy*', 'occupancy_query', 2),
    ('cudaFuncGetAttributes*', 'attribute_query', 2),
    ('hipFuncGetAttributes*', 'attribute_query', 2),
    ('cuModuleLoad*', 'module_load', 2),
    ('cuLibraryLoad*', 'module_load', 2),
    ('hipModuleLoad*', 'module_load', 2),
    ('cuptiActivityFlush*', 'profiler_flush', 2)
)
SELECT
  pattern,
  class,
  priority
FROM rules;

-- The class each distinct runtime call name gets from the rules (names are few: each is classified once,
-- not once per call), ordered by name for the lookup by name.
CREATE OR REPLACE PERFETTO TABLE _kineto_runtime_call_names(
  -- Call name.
  name STRING,
  -- Class from _kineto_runtime_call_rules, or other.
  name_class STRING
) AS
SELECT
  n.name,
  coalesce(
    (
      SELECT r.class
      FROM _kineto_runtime_call_rules AS r
      WHERE
        n.name GLOB r.pattern
      ORDER BY r.priority, length(r.pattern) DESC
      LIMIT 1
    ),
    'other'
  ) AS name_class
FROM (
  SELECT DISTINCT name
  FROM kineto_host_slices
  WHERE
    event_class = 'runtime'
) AS n
ORDER BY n.name;

-- By name.
CREATE OR REPLACE PERFETTO INDEX _kineto_runtime_call_names_name ON _kineto_runtime_call_names(name);

-- The copy activities of each correlation id (memcpy / memset), summarized: what kineto_runtime_calls
-- needs to decide whether an async copy blocked. Ordered by correlation for the lookup by id.
CREATE OR REPLACE PERFETTO TABLE _kineto_runtime_call_copies(
  -- Runtime correlation id.
  correlation LONG,
  -- Copy direction (the max over the correlation's copies, as one value per call).
  copy_direction STRING,
  -- Pageable host memory (max over the copies).
  pageable BOOL,
  -- Latest end of the copies.
  copy_end_ts TIMESTAMP
) AS
SELECT
  k.correlation,
  max(
    CASE
      WHEN k.kind = 'memset' THEN 'set'
      WHEN k.name GLOB '*HtoD*' THEN 'HtoD'
      WHEN k.name GLOB '*DtoH*' THEN 'DtoH'
      WHEN k.name GLOB '*DtoD*' THEN 'DtoD'
      WHEN k.name GLOB '*HtoH*' THEN 'HtoH'
      WHEN k.name GLOB '*PtoP*' THEN 'PtoP'
    END
  ) AS copy_direction,
  max(k.name GLOB '*Pageable*') AS pageable,
  max(k.ts + k.dur) AS copy_end_ts
FROM kineto_kernels AS k
WHERE
  k.kind IN ('memcpy', 'memset')
  AND k.correlation IS NOT NULL
GROUP BY k.correlation
ORDER BY k.correlation;

-- Every runtime / driver call, classified once. Other modules and queries read `class` and `blocks_host`
-- instead of matching call names.
--
-- An `async_copy` call blocks the host (class becomes `blocking_copy`) when its own copy activity says
-- pageable host memory (`Memcpy DtoH (Device -> Pageable)`, `Memcpy HtoD (Pageable -> Device)`), or,
-- when the activity names no memory kind, when the call returned only after its copy had finished on the
-- device (call end >= copy end): an asynchronous call returns before the DMA it queued completes, so a call
-- that outlived its copy waited for it.
CREATE OR REPLACE PERFETTO TABLE kineto_runtime_calls(
  -- Slice id of the call.
  id JOINID(slice.id),
  -- Call start.
  ts TIMESTAMP,
  -- Call duration (host time inside the runtime).
  dur DURATION,
  -- Call name, e.g. cudaLaunchKernel.
  name STRING,
  -- Thread of the call.
  utid JOINID(thread.id),
  -- Process of the call.
  upid JOINID(process.id),
  -- Runtime correlation id (`args.correlation`).
  correlation LONG,
  -- Class from _kineto_runtime_call_rules, with async copies that blocked upgraded to blocking_copy.
  class STRING,
  -- The class the name alone gives (before the per-call copy decision).
  name_class STRING,
  -- True when the host waits in the call for device work: syncs and blocking copies.
  blocks_host BOOL,
  -- For copies with a recorded activity: HtoD, DtoH, DtoD, HtoH, PtoP or set (memset); else NULL.
  copy_direction STRING,
  -- For copies with a recorded activity: true when host memory is pageable.
  pageable BOOL,
  -- End of the call's copy activity on the device (NULL without one).
  copy_end_ts TIMESTAMP
) AS
WITH
  -- runtime calls from the shared host-slice table (built once per trace), args from the slice by id;
  -- name class and copies by lookups in the small sorted tables above (no join per row scans a table)
  calls AS (
    SELECT
      h.id,
      h.ts,
      h.dur,
      h.name,
      h.utid,
      h.upid,
      extract_arg(s.arg_set_id, 'args.correlation') AS correlation
    FROM kineto_host_slices AS h
    JOIN slice AS s
      USING (id)
    WHERE
      h.event_class = 'runtime'
  ),
  classified AS (
    SELECT
      c.*,
      n.name_class,
      co.copy_direction,
      co.pageable,
      co.copy_end_ts,
      CASE
        WHEN n.name_class = 'async_copy' AND (
          (co.pageable AND co.copy_direction IN ('DtoH', 'HtoD'))
          OR (co.pageable IS NULL AND co.copy_end_ts IS NOT NULL AND c.ts + c.dur >= co.copy_end_ts)
        ) THEN 'blocking_copy'
        ELSE n.name_class
      END AS class
    FROM calls AS c
    JOIN _kineto_runtime_call_names AS n
      USING (name)
    LEFT JOIN _kineto_runtime_call_copies AS co
      USING (correlation)
  )
SELECT
  id,
  ts,
  dur,
  name,
  utid,
  upid,
  correlation,
  class,
  name_class,
  class IN ('stream_sync', 'device_sync', 'event_sync', 'blocking_copy') AS blocks_host,
  copy_direction,
  pageable,
  copy_end_ts
FROM classified
ORDER BY ts;

-- Queries look calls up by correlation (the device activities they launched): index it.
CREATE OR REPLACE PERFETTO INDEX _kineto_runtime_calls_correlation ON kineto_runtime_calls(correlation);
