-- id: catalog.memory_churn
-- version: 7
-- kind: detector
-- title: Memory churn: allocator round trips to the driver / system inside iterations
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Memory churn -> malloc
--   stalls"
-- what: cudaMalloc / cudaFree (hipMalloc / hipFree) calls inside steady iterations (ProfilerStep
--   windows, else the inferred ones of kineto.lib.iterations); an allocator sawtooth in the
--   [memory] events (reserved memory moving inside a step; on CPU, allocations whose sizes change from
--   step to step and make up a real share of the bytes the step allocates); peak near capacity.
-- confirming: per iteration: malloc/free runtime calls and their time, the ledger's idle.alloc (device
--   idle while the host is in them), reserved-memory changes, CPU allocations and their distinct sizes,
--   how many of them are in a size no other steady iteration allocates and their share of the bytes
--   the iteration allocates, the allocated sawtooth amplitude, reserved minus allocated.
-- why: cudaMalloc / cudaFree synchronize the device and take milliseconds; a warm caching allocator makes
--   none, so every one inside a steady iteration is the cache growing, being emptied, or bypassed. Their
--   cost is the device time they leave idle: impact_dur is the ledger's idle.alloc of the iteration (the
--   device idle while the host sits in a malloc / free, reading.step_ledger's precedence), so calls that
--   run while the device is busy cost nothing. The same sizes allocated every step are what a caching
--   allocator serves from its cache (PyTorch docs, "CUDA semantics", memory management: freed blocks are
--   kept and reused for requests of the same size class), so they cost little; sizes that change from
--   step to step (variable shapes: a random batch size, a variable sequence length) miss the cache,
--   fragment it and reach the system or driver allocator. Churn is therefore judged by change, not by
--   size: a CPU allocation counts when no other steady iteration allocates its size (a size that comes
--   back in another step, as a fixed-shape batch handed over by DataLoader workers in some steps only,
--   is one the allocator has served before), and the iteration fires when such allocations, in at least 2 sizes, hold a tenth or more of the bytes it
--   allocates (a model's activations scale with the batch, so a changing batch moves most of them; a
--   size-per-allocation floor would depend on the model's width, not on the pattern). A fixed-shape loop
--   stays silent, and one steady iteration alone has nothing to compare with. On a CPU-only capture the
--   cost is not in the trace (a fresh system allocation page-faults on first touch, inside the op's own
--   time: impact 0), but the pattern is what fragments the device's caching allocator when the same loop
--   runs on a GPU: such a row is said at low severity, ranked after every finding that costs time.
-- known_problems: the first iteration while the caching allocator warms up (cold windows are left out:
--   catalog.cold_start's); a deliberate torch.cuda.empty_cache() between phases; on CPU, sizes that
--   cycle through a few fixed shapes (bucketed sequence lengths) with fewer steady iterations than
--   buckets; on CPU, a loop whose only changing allocations are a few small buffers next to a model's
--   fixed weights and gradients stays under the byte share.
-- example: runtime_malloc_mid_step
-- use_instead: static shapes (pad / bucket), expandable_segments:True, preallocate and reuse buffers (out=),
--   no torch.cuda.empty_cache() in the loop.
-- needs: none
-- claims: idle.alloc
-- status: stable
-- catalog_row: major.memory_churn
-- default min_runtime_calls: 1
-- default min_reserved_changes: 1
-- default min_changing_allocs: 4
-- default min_changing_pct: 10

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
  -- CPU allocations per iteration in sizes that change from step to step (no other steady iteration
  -- allocates them) that fire, with at least 2 such distinct sizes. The same sizes every step are the
  -- allocator's reuse and never fire.
  min_changing_allocs LONG,
  -- Share of the iteration's CPU-allocated bytes, in percent, that those changing-size allocations must
  -- hold to fire.
  min_changing_pct DOUBLE
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
  -- CPU allocations in the iteration.
  cpu_alloc_count LONG,
  -- Their distinct sizes.
  cpu_alloc_sizes LONG,
  -- Of the CPU allocations, those in a size no other steady iteration allocates.
  cpu_changing_alloc_count LONG,
  -- Their distinct sizes.
  cpu_changing_alloc_sizes LONG,
  -- Their bytes as a share of the bytes the iteration's CPU allocations take, percent.
  cpu_changing_bytes_pct DOUBLE,
  -- Max minus min Total Allocated over the iteration's [memory] events (the sawtooth amplitude), bytes.
  sawtooth_bytes LONG,
  -- Largest Total Reserved minus Total Allocated in the iteration (device), bytes.
  reserved_minus_allocated_bytes LONG,
  -- The fix for what was seen: runtime calls (the device allocator) or CPU allocations of changing sizes.
  fix STRING,
  -- 'low' for a CPU-only iteration that fires on changing sizes (its cost is not in the trace), else NULL.
  min_severity STRING
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
  -- CPU allocations, and whether their size is new: allocated in one steady iteration only (a size another
  -- steady iteration allocates too is one the allocator has served before, even if not every step has it)
  cpu AS (
    SELECT window_id, bytes
    FROM placed
    WHERE
      source = 'allocator'
      AND device_type = 0
      AND kind = 'alloc'
  ),
  size_windows AS (
    SELECT
      bytes,
      count(DISTINCT window_id) = 1 AND (SELECT count(*) FROM kineto_ledger_windows WHERE NOT is_cold) >= 2 AS is_changing
    FROM cpu
    GROUP BY bytes
  ),
  cpu_sizes AS (
    SELECT
      c.window_id,
      count(*) AS n,
      count(DISTINCT c.bytes) AS sizes,
      sum(c.bytes) AS total_bytes,
      sum(sw.is_changing) AS changing_n,
      count(DISTINCT CASE WHEN sw.is_changing THEN c.bytes END) AS changing_sizes,
      sum(CASE WHEN sw.is_changing THEN c.bytes ELSE 0 END) AS changing_bytes
    FROM cpu AS c
    JOIN size_windows AS sw
      USING (bytes)
    GROUP BY c.window_id
  ),
  alloc AS (
    SELECT
      window_id,
      sum(device_type != 0 AND prev_reserved IS NOT NULL AND total_reserved != prev_reserved) AS reserved_change_count,
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
      lanes,
      has_device
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
      w.has_device,
      w.alloc_idle_dur,
      coalesce(rt.n, 0) AS runtime_call_count,
      coalesce(rt.d, 0) AS runtime_call_dur,
      coalesce(a.reserved_change_count, 0) AS reserved_change_count,
      coalesce(c.n, 0) AS cpu_alloc_count,
      coalesce(c.sizes, 0) AS cpu_alloc_sizes,
      coalesce(c.changing_n, 0) AS cpu_changing_alloc_count,
      coalesce(c.changing_sizes, 0) AS cpu_changing_alloc_sizes,
      coalesce(c.changing_bytes, 0) AS cpu_changing_bytes,
      coalesce(c.total_bytes, 0) AS cpu_alloc_bytes,
      a.sawtooth_bytes,
      a.reserved_minus_allocated_bytes
    FROM windows AS w
    LEFT JOIN alloc AS a
      USING (window_id)
    LEFT JOIN rt
      USING (window_id)
    LEFT JOIN cpu_sizes AS c
      USING (window_id)
  ),
  judged AS (
    SELECT
      *,
      cpu_changing_alloc_count >= $min_changing_allocs
        AND cpu_changing_alloc_sizes >= 2
        AND 100.0 * cpu_changing_bytes >= $min_changing_pct * cpu_alloc_bytes
        AND cpu_alloc_bytes > 0 AS cpu_churn
    FROM rows
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
      WHEN r.cpu_changing_alloc_count > 0 THEN printf(
        ', %d of its %d CPU allocations are in %d sizes no other steady %s allocates, %.1f%% of the %.1f MB it allocates (changing shapes miss the allocator''s cache)',
        r.cpu_changing_alloc_count,
        r.cpu_alloc_count,
        r.cpu_changing_alloc_sizes,
        CASE WHEN r.source = 'profiler_step' THEN 'step' ELSE 'iteration' END,
        100.0 * r.cpu_changing_bytes / max(r.cpu_alloc_bytes, 1),
        r.cpu_alloc_bytes / 1048576.0
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
  r.cpu_alloc_count,
  r.cpu_alloc_sizes,
  r.cpu_changing_alloc_count,
  r.cpu_changing_alloc_sizes,
  round(100.0 * r.cpu_changing_bytes / max(r.cpu_alloc_bytes, 1), 2) AS cpu_changing_bytes_pct,
  r.sawtooth_bytes,
  r.reserved_minus_allocated_bytes,
  CASE
    WHEN r.runtime_call_count > 0 OR r.reserved_change_count > 0 THEN 'A warm caching allocator calls no cudaMalloc / cudaFree: check that it is not disabled (PYTORCH_NO_CUDA_MEMORY_CACHING) or emptied in the loop (torch.cuda.empty_cache()), keep shapes static (pad / bucket) or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and preallocate / reuse buffers (out=).'
    ELSE 'Keep shapes static from step to step: fixed or bucketed batch sizes and sequence lengths (pad to a few sizes, drop_last=True), so the allocator reuses the same blocks every step; reuse buffers instead of allocating them every iteration (out=, in-place ops).'
  END AS fix,
  CASE WHEN r.cpu_churn AND NOT r.has_device THEN 'low' END AS min_severity
FROM judged AS r
WHERE
  r.runtime_call_count >= $min_runtime_calls
  OR r.reserved_change_count >= $min_reserved_changes
  OR r.cpu_churn
ORDER BY r.ts;
