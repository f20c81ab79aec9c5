-- id: catalog.memory_churn
-- version: 6
-- kind: detector
-- title: Memory churn: allocator round trips to the driver / system inside iterations
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Memory churn -> malloc
--   stalls"
-- what: cudaMalloc / cudaFree (hipMalloc / hipFree) calls inside steady iterations (ProfilerStep
--   windows, else the inferred ones of kineto.lib.iterations); an allocator sawtooth in the
--   [memory] events (reserved memory moving inside a step; on CPU, multi-MB system allocations whose sizes
--   change from step to step); peak near capacity.
-- confirming: per iteration: malloc/free runtime calls and their time, the ledger's idle.alloc (device
--   idle while the host is in them), reserved-memory changes, large CPU allocations and their distinct
--   sizes, how many of them are in a size not allocated in every steady iteration, the allocated sawtooth
--   amplitude, reserved minus allocated.
-- why: cudaMalloc / cudaFree synchronize the device and take milliseconds; a warm caching allocator makes
--   none, so every one inside a steady iteration is the cache growing, being emptied, or bypassed. Their
--   cost is the device time they leave idle: impact_dur is the ledger's idle.alloc of the iteration (the
--   device idle while the host sits in a malloc / free, reading.step_ledger's precedence), so calls that
--   run while the device is busy cost nothing. System allocations of many MB on a CPU-only capture
--   page-fault on first touch; the trace does not separate that from the op's own work (impact 0).
--   The same sizes allocated every step are what a caching allocator serves from its cache (PyTorch docs,
--   "CUDA semantics", memory management: freed blocks are kept and reused for requests of the same size
--   class), so they cost little; sizes that change from step to step (variable shapes) miss the cache,
--   fragment it and reach the system or driver allocator. A large CPU allocation counts only when its
--   size is not allocated in every steady iteration: a fixed-shape loop stays silent, and one steady
--   iteration alone has nothing to compare with.
-- known_problems: the first iteration while the caching allocator warms up (cold windows are left out:
--   catalog.cold_start's); a deliberate torch.cuda.empty_cache() between phases; on CPU, sizes that
--   cycle through a few fixed shapes (bucketed sequence lengths) with fewer steady iterations than
--   buckets.
-- example: runtime_malloc_mid_step
-- use_instead: static shapes (pad / bucket), expandable_segments:True, preallocate and reuse buffers (out=),
--   no torch.cuda.empty_cache() in the loop.
-- needs: none
-- claims: idle.alloc
-- status: stable
-- catalog_row: major.memory_churn
-- default min_runtime_calls: 1
-- default min_reserved_changes: 1
-- default min_alloc_mb: 1
-- default min_cpu_large_allocs: 4

INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;
INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;
INCLUDE PERFETTO MODULE kineto.lib.memory;
INCLUDE PERFETTO MODULE kineto.lib.window_of;

-- One row per steady iteration with allocator churn.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_memory_churn(
  -- Malloc/free runtime calls per iteration that fire (the caching allocator makes none once warm)
  min_runtime_calls LONG,
  -- Device reserved-memory changes per iteration that fire.
  min_reserved_changes LONG,
  -- A CPU allocation of at least this many MB goes to the system allocator.
  min_alloc_mb DOUBLE,
  -- Large CPU allocations per iteration in sizes that change from step to step (not allocated in every
  -- steady iteration) that fire, with at least 2 such distinct sizes. The same sizes every step are the
  -- allocator's reuse and never fire.
  min_cpu_large_allocs LONG
)
RETURNS TABLE(
  -- Iteration start.
  ts TIMESTAMP,
  -- Iteration width.
  dur DURATION,
  -- Step time lost: the ledger's idle.alloc of the iteration (device idle while the host is in malloc/free).
  impact_dur DURATION,
  -- Iteration number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- cudaMalloc / cudaFree / hipMalloc / hipFree... calls in the iteration.
  runtime_call_count LONG,
  -- Their time.
  runtime_call_dur DURATION,
  -- Device [memory] events that changed Total Reserved.
  reserved_change_count LONG,
  -- CPU allocations of at least min_alloc_mb.
  cpu_large_alloc_count LONG,
  -- Their distinct sizes.
  cpu_large_alloc_sizes LONG,
  -- Of the large CPU allocations, those in a size not allocated in every steady iteration.
  cpu_changing_alloc_count LONG,
  -- Their distinct sizes.
  cpu_changing_alloc_sizes LONG,
  -- Max minus min Total Allocated over the iteration's [memory] events (the sawtooth amplitude), bytes.
  sawtooth_bytes LONG,
  -- Largest Total Reserved minus Total Allocated in the iteration (device), bytes.
  reserved_minus_allocated_bytes LONG,
  -- The fix for what was seen: runtime calls (the device allocator) or large CPU allocations.
  fix STRING
) AS
WITH
  -- the previous Total Reserved of the same allocator, over the whole capture
  ev AS (
    SELECT
      m.*,
      lag(m.total_reserved) OVER (PARTITION BY m.source, m.device_type, m.device ORDER BY m.ts, m.id) AS prev_reserved
    FROM kineto_memory AS m
  ),
  -- MATERIALIZED: four CTEs below read it, and SQLite would otherwise place every event again for each
  placed AS MATERIALIZED (
    SELECT e.*, w.window_id
    FROM ev AS e
    JOIN kineto_window_of!(kineto_memory) AS w
      USING (id)
    WHERE
      NOT w.is_cold
  ),
  -- large CPU allocations, and how many steady iterations allocate each size
  large AS (
    SELECT window_id, bytes
    FROM placed
    WHERE
      source = 'allocator'
      AND device_type = 0
      AND kind = 'alloc'
      AND bytes >= $min_alloc_mb * 1048576
  ),
  size_windows AS (
    SELECT bytes, count(DISTINCT window_id) AS window_count FROM large GROUP BY bytes
  ),
  changing AS (
    SELECT l.window_id, count(*) AS n, count(DISTINCT l.bytes) AS sizes
    FROM large AS l
    JOIN size_windows AS sw
      USING (bytes)
    WHERE
      sw.window_count < (SELECT count(*) FROM kineto_ledger_windows WHERE NOT is_cold)
    GROUP BY l.window_id
  ),
  alloc AS (
    SELECT
      window_id,
      sum(device_type != 0 AND prev_reserved IS NOT NULL AND total_reserved != prev_reserved) AS reserved_change_count,
      sum(device_type = 0 AND kind = 'alloc' AND bytes >= $min_alloc_mb * 1048576) AS cpu_large_alloc_count,
      count(DISTINCT CASE WHEN device_type = 0 AND kind = 'alloc' AND bytes >= $min_alloc_mb * 1048576 THEN bytes END) AS cpu_large_alloc_sizes,
      max(total_allocated) - min(total_allocated) AS sawtooth_bytes,
      max(CASE WHEN device_type != 0 THEN total_reserved - total_allocated END) AS reserved_minus_allocated_bytes
    FROM placed
    WHERE
      source = 'allocator'
    GROUP BY window_id
  ),
  rt AS (
    SELECT window_id, count(*) AS n, sum(dur) AS d
    FROM placed
    WHERE
      source = 'runtime'
    GROUP BY window_id
  ),
  -- the ledger's claim per steady window: idle.alloc
  windows AS (
    SELECT
      window_id,
      step,
      source,
      window_ts,
      window_dur,
      claim_dur AS alloc_idle_dur,
      lanes
    FROM kineto_ledger_claim('idle.alloc')
    WHERE
      NOT is_cold
  ),
  rows AS (
    SELECT
      w.window_ts AS ts,
      w.window_dur AS dur,
      w.step,
      w.source,
      w.lanes,
      w.alloc_idle_dur,
      coalesce(rt.n, 0) AS runtime_call_count,
      coalesce(rt.d, 0) AS runtime_call_dur,
      coalesce(a.reserved_change_count, 0) AS reserved_change_count,
      coalesce(a.cpu_large_alloc_count, 0) AS cpu_large_alloc_count,
      coalesce(a.cpu_large_alloc_sizes, 0) AS cpu_large_alloc_sizes,
      coalesce(c.n, 0) AS cpu_changing_alloc_count,
      coalesce(c.sizes, 0) AS cpu_changing_alloc_sizes,
      a.sawtooth_bytes,
      a.reserved_minus_allocated_bytes
    FROM windows AS w
    LEFT JOIN alloc AS a
      USING (window_id)
    LEFT JOIN rt
      USING (window_id)
    LEFT JOIN changing AS c
      USING (window_id)
  )
SELECT
  r.ts,
  r.dur,
  r.alloc_idle_dur AS impact_dur,
  r.step,
  printf(
    '%s %d: %s%s%s; allocated swings %.1f MB%s.',
    CASE WHEN r.source = 'profiler_step' THEN 'Step' ELSE 'Iteration' END,
    r.step,
    CASE
      WHEN r.runtime_call_count > 0 THEN printf(
        '%d malloc/free runtime calls take %.3f ms and the device idles %.3f ms in them (%.1f%% of the %.3f ms %s)',
        r.runtime_call_count,
        r.runtime_call_dur / 1e6,
        r.alloc_idle_dur / 1e6,
        100.0 * r.alloc_idle_dur / max(r.dur * r.lanes, 1),
        r.dur / 1e6,
        CASE WHEN r.source = 'profiler_step' THEN 'step' ELSE 'iteration' END
      )
      ELSE 'no malloc/free runtime calls'
    END,
    CASE WHEN r.reserved_change_count > 0 THEN printf(', %d reserved-memory changes', r.reserved_change_count) ELSE '' END,
    CASE
      WHEN r.cpu_large_alloc_count > 0 THEN printf(
        ', %d CPU allocations >= %.0f MB in %d sizes, %d of them in %d sizes not allocated in every steady %s (changing shapes miss the allocator''s cache)',
        r.cpu_large_alloc_count,
        $min_alloc_mb,
        r.cpu_large_alloc_sizes,
        r.cpu_changing_alloc_count,
        r.cpu_changing_alloc_sizes,
        CASE WHEN r.source = 'profiler_step' THEN 'step' ELSE 'iteration' END
      )
      ELSE ''
    END,
    coalesce(r.sawtooth_bytes, 0) / 1048576.0,
    CASE
      WHEN r.reserved_minus_allocated_bytes IS NOT NULL THEN printf(', reserved exceeds allocated by up to %.1f MB', r.reserved_minus_allocated_bytes / 1048576.0)
      ELSE ''
    END
  ) AS evidence,
  r.runtime_call_count,
  r.runtime_call_dur,
  r.reserved_change_count,
  r.cpu_large_alloc_count,
  r.cpu_large_alloc_sizes,
  r.cpu_changing_alloc_count,
  r.cpu_changing_alloc_sizes,
  r.sawtooth_bytes,
  r.reserved_minus_allocated_bytes,
  CASE
    WHEN r.runtime_call_count > 0 OR r.reserved_change_count > 0 THEN 'A warm caching allocator calls no cudaMalloc / cudaFree: check that it is not disabled (PYTORCH_NO_CUDA_MEMORY_CACHING) or emptied in the loop (torch.cuda.empty_cache()), keep shapes static (pad / bucket) or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and preallocate / reuse buffers (out=).'
    ELSE 'Reuse large CPU buffers instead of allocating them every iteration (preallocate, out=, in-place ops), keep shapes static, and keep per-iteration tensors off the system allocator''s large-allocation path (a pinned / reused staging buffer).'
  END AS fix
FROM rows AS r
WHERE
  r.runtime_call_count >= $min_runtime_calls
  OR r.reserved_change_count >= $min_reserved_changes
  OR (r.cpu_changing_alloc_count >= $min_cpu_large_allocs AND r.cpu_changing_alloc_sizes >= 2)
ORDER BY r.ts;
