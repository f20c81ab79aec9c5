-- id: guide.cold_start
-- version: 2
-- kind: guide
-- title: Cold start: is the first step wider than the median of the rest, by how much, and why
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Key CPU Lane Indicators:
--   Cold-Start Overhead"; "torch.profiler & HTA: the Framework View", Fault catalog, minor fault (profiler
--   schedule distortion)
-- needs: steps, cpu_ops
-- status: stable
-- default cold_factor: 1.5

-- Compares the first ProfilerStep of each process with the median width of its other steps (at least
-- two steps are needed). The why columns count, in the first step and per other step, what one-time
-- work leaves in a trace: device allocator calls (cudaMalloc / hipMalloc: workspace and caching
-- allocator growth), lazy module / function loading (Kineto's `Lazy Function Loading` overhead rows and
-- cuModuleLoad* / cuLibraryLoad* calls), allocator growth (`Total Reserved` rising in [memory] events),
-- occupancy queries (cuBLAS / cuDNN heuristics) and ops that run in the first step only (for example
-- aten::zeros_like creating optimizer state).

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.memory;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;

-- One-time-work markers per step: host slices of the step's process inside the step window.
CREATE OR REPLACE PERFETTO TABLE _kineto_guide_cold_marks(
  -- Step number.
  step LONG,
  -- Process of the step.
  upid JOINID(process.id),
  -- Device allocator calls (cudaMalloc, hipMalloc, cuMemAlloc...).
  mallocs LONG,
  -- Lazy loading rows and module / library load calls (class module_load of kineto.lib.runtime_calls).
  lazy_loads LONG,
  -- Occupancy queries (class occupancy_query of kineto.lib.runtime_calls).
  occupancy_calls LONG,
  -- Growth of the allocator's Total Reserved over the step, bytes.
  reserved_growth LONG
) AS
SELECT
  st.step,
  st.upid,
  (
    SELECT count(*)
    FROM kineto_memory AS m
    WHERE
      m.source = 'runtime'
      AND m.kind = 'alloc'
      AND m.ts >= st.ts
      AND m.ts < st.ts + st.dur
  ) AS mallocs,
  (
    SELECT count(*)
    FROM slice AS s
    WHERE
      s.ts >= st.ts
      AND s.ts < st.ts + st.dur
      AND s.name = 'Lazy Function Loading'
  ) + (
    SELECT count(*)
    FROM kineto_runtime_calls AS r
    WHERE
      r.ts >= st.ts
      AND r.ts < st.ts + st.dur
      AND r.class = 'module_load'
  ) AS lazy_loads,
  (
    SELECT count(*)
    FROM kineto_runtime_calls AS r
    WHERE
      r.ts >= st.ts
      AND r.ts < st.ts + st.dur
      AND r.class = 'occupancy_query'
  ) AS occupancy_calls,
  coalesce(
    (
      SELECT max(m.total_reserved) - min(m.total_reserved)
      FROM kineto_memory AS m
      WHERE
        m.source = 'allocator'
        AND m.ts >= st.ts
        AND m.ts < st.ts + st.dur
    ),
    0
  ) AS reserved_growth
FROM kineto_steps AS st;

-- One row per process with at least two steps.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_cold_start(
  -- The first step is cold when at least this many times the median of the other steps.
  cold_factor DOUBLE
)
RETURNS TABLE(
  -- Step number of the first step.
  first_step LONG,
  -- Its width.
  first_dur DURATION,
  -- Median width of the other steps.
  median_rest_dur DURATION,
  -- first_dur / median_rest_dur.
  factor DOUBLE,
  -- first_dur - median_rest_dur.
  extra_dur DURATION,
  -- Number of other steps.
  rest_steps LONG,
  -- True when factor >= cold_factor.
  is_cold BOOL,
  -- Device allocator calls in the first step / mean per other step.
  mallocs_first LONG,
  -- Mean device allocator calls per other step.
  mallocs_rest DOUBLE,
  -- Lazy loading rows in the first step.
  lazy_loads_first LONG,
  -- Occupancy queries in the first step.
  occupancy_first LONG,
  -- Mean occupancy queries per other step.
  occupancy_rest DOUBLE,
  -- Allocator Total Reserved growth in the first step, bytes.
  reserved_growth_first LONG,
  -- Distinct ATen op names that run in the first step and in no other step.
  first_only_ops LONG,
  -- Up to five of them with their counts, e.g. `aten::zeros_like x12`.
  first_only_examples STRING,
  -- One sentence with the numbers and the likely why.
  evidence STRING
) AS
WITH
  ranked AS (
    SELECT
      st.*,
      row_number() OVER (PARTITION BY st.upid ORDER BY st.ts) AS pos,
      count(*) OVER (PARTITION BY st.upid) AS n
    FROM kineto_steps AS st
  ),
  rest AS (
    SELECT
      r.*,
      row_number() OVER (PARTITION BY r.upid ORDER BY r.dur) AS drank
    FROM ranked AS r
    WHERE
      r.pos > 1
  ),
  medians AS (
    SELECT
      upid,
      count(*) AS rest_steps,
      CAST(avg(dur) AS INT) AS median_dur
    FROM rest AS x
    WHERE
      x.drank IN ((x.n - 1 + 1) / 2, (x.n - 1 + 2) / 2)
    GROUP BY upid
  ),
  rest_counts AS (
    SELECT
      upid,
      count(*) AS rest_steps
    FROM rest
    GROUP BY upid
  ),
  first AS (
    SELECT *
    FROM ranked
    WHERE
      pos = 1
      AND n >= 2
  ),
  rest_marks AS (
    SELECT
      r.upid,
      avg(m.mallocs) AS mallocs,
      avg(m.occupancy_calls) AS occupancy_calls
    FROM rest AS r
    JOIN _kineto_guide_cold_marks AS m
      ON m.step = r.step
      AND m.upid = r.upid
    GROUP BY r.upid
  ),
  op_names AS (
    SELECT
      o.name,
      o.step,
      count(*) AS calls
    FROM kineto_cpu_ops AS o
    WHERE
      o.step IS NOT NULL
      AND NOT o.is_annotation
    GROUP BY o.name, o.step
  ),
  first_only AS (
    SELECT
      f.upid,
      n.name,
      n.calls
    FROM first AS f
    JOIN op_names AS n
      ON n.step = f.step
    WHERE
      NOT EXISTS (
        SELECT 1
        FROM op_names AS o2
        JOIN rest AS r
          ON r.step = o2.step
          AND r.upid = f.upid
        WHERE
          o2.name = n.name
      )
  ),
  joined AS (
    SELECT
      f.step AS first_step,
      f.dur AS first_dur,
      md.median_dur,
      rc.rest_steps,
      round(1.0 * f.dur / md.median_dur, 2) AS factor,
      fm.mallocs AS mallocs_first,
      round(rm.mallocs, 2) AS mallocs_rest,
      fm.lazy_loads AS lazy_first,
      fm.occupancy_calls AS occ_first,
      round(rm.occupancy_calls, 2) AS occ_rest,
      fm.reserved_growth AS reserved_first,
      (SELECT count(*) FROM first_only AS x WHERE x.upid = f.upid) AS first_only_ops,
      (
        SELECT group_concat(y.name || ' x' || y.calls, ', ')
        FROM (
          SELECT x.name, x.calls
          FROM first_only AS x
          WHERE
            x.upid = f.upid
          ORDER BY x.calls DESC, x.name
          LIMIT 5
        ) AS y
      ) AS first_only_examples
    FROM first AS f
    JOIN medians AS md
      USING (upid)
    JOIN rest_counts AS rc
      USING (upid)
    LEFT JOIN _kineto_guide_cold_marks AS fm
      ON fm.step = f.step
      AND fm.upid = f.upid
    LEFT JOIN rest_marks AS rm
      ON rm.upid = f.upid
  )
SELECT
  first_step,
  first_dur,
  median_dur AS median_rest_dur,
  factor,
  first_dur - median_dur AS extra_dur,
  rest_steps,
  factor >= $cold_factor AS is_cold,
  mallocs_first,
  mallocs_rest,
  lazy_first AS lazy_loads_first,
  occ_first AS occupancy_first,
  occ_rest AS occupancy_rest,
  reserved_first AS reserved_growth_first,
  first_only_ops,
  first_only_examples,
  printf(
    'first step %d is %.3f ms, %.2fx the median %.3f ms of the other %d steps (%s)%s',
    first_step,
    first_dur / 1e6,
    factor,
    median_dur / 1e6,
    rest_steps,
    CASE WHEN factor >= $cold_factor THEN 'cold start' ELSE 'not a cold start' END,
    CASE
      WHEN factor < $cold_factor THEN ''
      ELSE ': ' || coalesce(
        nullif(
          trim(
            CASE WHEN mallocs_first > coalesce(mallocs_rest, 0) THEN printf('%d device allocator calls (workspace / allocator growth); ', mallocs_first) ELSE '' END
            || CASE WHEN lazy_first > 0 THEN printf('%d lazy function / module loads; ', lazy_first) ELSE '' END
            || CASE WHEN occ_first > coalesce(occ_rest, 0) THEN printf('%d occupancy queries vs %.1f per later step (heuristics); ', occ_first, coalesce(occ_rest, 0)) ELSE '' END
            || CASE WHEN reserved_first > 0 THEN printf('allocator reserved grew by %d bytes; ', reserved_first) ELSE '' END
            || CASE WHEN first_only_ops > 0 THEN printf('%d op names only in this step (%s); ', first_only_ops, first_only_examples) ELSE '' END,
            '; '
          ),
          ''
        ),
        'the trace shows no one-time work (warm up before profiling)'
      )
    END
  ) AS evidence
FROM joined
ORDER BY first_step;
