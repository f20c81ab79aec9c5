-- id: catalog.memory_churn
-- version: 1
-- kind: detector
-- title: Memory churn: allocator round trips to the driver / system inside steps
-- source: seed 000 section 3, major fault "Memory churn -> malloc stalls"
-- signature: cudaMalloc / cudaFree (hipMalloc / hipFree) calls mid-step; an allocator sawtooth in the
--   [memory] events (reserved memory moving inside a step; on CPU, multi-MB system allocations of varying
--   sizes every step); peak near capacity.
-- confirming: per step: malloc/free runtime calls and their time, reserved-memory changes, large CPU
--   allocations and their distinct sizes, the allocated sawtooth amplitude, reserved minus allocated.
-- cost: cudaMalloc / cudaFree synchronize the device and take milliseconds; system allocations of many MB
--   page-fault on first touch. impact_dur is the host time in malloc/free runtime calls (0 when only
--   allocator events show the churn).
-- false_positives: the first steps while the caching allocator warms up; a deliberate
--   torch.cuda.empty_cache() between phases.
-- example: runtime_malloc_mid_step
-- fix: static shapes (pad / bucket), expandable_segments:True, preallocate and reuse buffers (out=),
--   no torch.cuda.empty_cache() in the loop.
-- needs: steps
-- claims: idle.alloc, host.ops
-- status: stable
-- catalog_row: major.memory_churn
-- default min_runtime_calls: 1
-- default min_reserved_changes: 1
-- default min_alloc_mb: 1
-- default min_cpu_large_allocs: 4
-- locked: 1 a165d4187a8670e5
-- lib: lib.event_categories@2 lib.memory@2 lib.steps@3
-- cases: runtime_malloc_mid_step=deb8073f cpu_large_allocs_threshold_1=6607ffcc
--   cpu_large_allocs_threshold_2=975176a3

INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.memory;

-- One row per step with allocator churn.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_memory_churn(
  -- Malloc/free runtime calls per step that fire (the caching allocator makes none once warm)
  min_runtime_calls LONG,
  -- Device reserved-memory changes per step that fire.
  min_reserved_changes LONG,
  -- A CPU allocation of at least this many MB goes to the system allocator.
  min_alloc_mb DOUBLE,
  -- Large CPU allocations per step that fire, with at least 2 distinct sizes.
  min_cpu_large_allocs LONG
)
RETURNS TABLE(
  -- Step start.
  ts TIMESTAMP,
  -- Step width.
  dur DURATION,
  -- Step time at stake: host time in malloc/free runtime calls (0 when only allocator events show it).
  impact_dur DURATION,
  -- Step number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- cudaMalloc / cudaFree / hipMalloc / hipFree... calls in the step.
  runtime_call_count LONG,
  -- Their time.
  runtime_call_dur DURATION,
  -- Device [memory] events that changed Total Reserved.
  reserved_change_count LONG,
  -- CPU allocations of at least min_alloc_mb.
  cpu_large_alloc_count LONG,
  -- Their distinct sizes.
  cpu_large_alloc_sizes LONG,
  -- Max minus min Total Allocated over the step's [memory] events (the sawtooth amplitude), bytes.
  sawtooth_bytes LONG,
  -- Largest Total Reserved minus Total Allocated in the step (device), bytes.
  reserved_minus_allocated_bytes LONG
) AS
WITH
  ev AS (
    SELECT
      m.*,
      lag(m.total_reserved) OVER (PARTITION BY m.device_type, m.device ORDER BY m.ts, m.id) AS prev_reserved
    FROM kineto_memory AS m
    WHERE
      m.source = 'allocator'
  ),
  alloc AS (
    SELECT
      step,
      sum(device_type != 0 AND prev_reserved IS NOT NULL AND total_reserved != prev_reserved) AS reserved_change_count,
      sum(device_type = 0 AND kind = 'alloc' AND bytes >= $min_alloc_mb * 1048576) AS cpu_large_alloc_count,
      count(DISTINCT CASE WHEN device_type = 0 AND kind = 'alloc' AND bytes >= $min_alloc_mb * 1048576 THEN bytes END) AS cpu_large_alloc_sizes,
      max(total_allocated) - min(total_allocated) AS sawtooth_bytes,
      max(CASE WHEN device_type != 0 THEN total_reserved - total_allocated END) AS reserved_minus_allocated_bytes
    FROM ev
    WHERE
      step IS NOT NULL
    GROUP BY step
  ),
  rt AS (
    SELECT step, count(*) AS n, sum(dur) AS d
    FROM kineto_memory
    WHERE
      source = 'runtime'
      AND step IS NOT NULL
    GROUP BY step
  ),
  rows AS (
    SELECT
      st.ts,
      st.dur,
      st.step,
      coalesce(rt.n, 0) AS runtime_call_count,
      coalesce(rt.d, 0) AS runtime_call_dur,
      coalesce(a.reserved_change_count, 0) AS reserved_change_count,
      coalesce(a.cpu_large_alloc_count, 0) AS cpu_large_alloc_count,
      coalesce(a.cpu_large_alloc_sizes, 0) AS cpu_large_alloc_sizes,
      a.sawtooth_bytes,
      a.reserved_minus_allocated_bytes
    FROM kineto_steps AS st
    LEFT JOIN alloc AS a
      USING (step)
    LEFT JOIN rt
      USING (step)
  )
SELECT
  r.ts,
  r.dur,
  r.runtime_call_dur AS impact_dur,
  r.step,
  printf(
    'Step %d: %d malloc/free runtime calls (%.3f ms), %d reserved-memory changes, %d CPU allocations >= %.0f MB in %d sizes; allocated swings %.1f MB%s.',
    r.step,
    r.runtime_call_count,
    r.runtime_call_dur / 1e6,
    r.reserved_change_count,
    r.cpu_large_alloc_count,
    $min_alloc_mb,
    r.cpu_large_alloc_sizes,
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
  r.sawtooth_bytes,
  r.reserved_minus_allocated_bytes
FROM rows AS r
WHERE
  r.runtime_call_count >= $min_runtime_calls
  OR r.reserved_change_count >= $min_reserved_changes
  OR (r.cpu_large_alloc_count >= $min_cpu_large_allocs AND r.cpu_large_alloc_sizes >= 2)
ORDER BY r.ts;
