-- id: guide.overhead_vs_compute
-- version: 4
-- kind: guide
-- title: Overhead-bound or compute-bound: self CPU total vs self device total, per step and per op
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Identifying Bottlenecks:
--   Overhead-Bound vs. Compute-Bound"
-- needs: steps, cpu_ops
-- status: stable
-- default overhead_ratio: 3
-- default small_op: 50us
-- default top_ops: 10

-- Self CPU = self time of CPU ops, annotations and runtime calls (torch key_averages' Self CPU total);
-- self device = device activities whose launch sits directly in the op (key_averages' Self CUDA). With
-- device activity: self CPU >= overhead_ratio x self device reads overhead-bound (the CPU spends more
-- time preparing and launching than the GPU computing; increase the work per op or fuse), otherwise
-- compute-bound. A CPU-only trace has no device column; there the share of outermost ATen calls (the
-- calls user code makes) shorter than small_op stands in: 50 % or more (the median call is small)
-- reads overhead-bound (per-op dispatch dominates).

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.host_slices;

-- Self CPU rows: CPU ops and annotations (self time) and runtime calls (their duration).
CREATE OR REPLACE PERFETTO TABLE _kineto_guide_ovc_cpu(
  -- Step number or NULL.
  step LONG,
  -- Op or runtime call name.
  name STRING,
  -- Self CPU time.
  self_dur DURATION,
  -- Total (inclusive) duration.
  dur DURATION,
  -- True for ATen ops (not annotations, not runtime calls).
  is_aten BOOL,
  -- True for an ATen op with no ATen op above it (the call the user's code made).
  is_outer BOOL
) AS
SELECT
  o.step,
  o.name,
  o.self_dur,
  o.dur,
  NOT o.is_annotation AS is_aten,
  NOT o.is_annotation
  AND NOT EXISTS (
    SELECT 1
    FROM ancestor_slice(o.id) AS a
    WHERE
      a.category IN (
        SELECT category FROM kineto_event_categories WHERE event_class = 'cpu_op' AND NOT is_annotation
      )
      AND NOT a.name GLOB 'ProfilerStep#*'
  ) AS is_outer
FROM kineto_cpu_ops AS o
UNION ALL
SELECT
  h.step,
  h.name,
  h.dur AS self_dur,
  h.dur,
  FALSE AS is_aten,
  FALSE AS is_outer
FROM kineto_host_slices AS h
WHERE
  h.event_class = 'runtime';

-- Self device rows: each device activity charged to the op its launch call sits in.
CREATE OR REPLACE PERFETTO TABLE _kineto_guide_ovc_device(
  -- Step number of the launch, or NULL.
  step LONG,
  -- The launching op (innermost CPU op or annotation), or NULL.
  name STRING,
  -- Device time.
  dur DURATION
) AS
SELECT
  l.step,
  l.op_name AS name,
  k.dur
FROM kineto_kernels AS k
JOIN kineto_launches AS l
  ON l.correlation = k.correlation
WHERE
  k.correlation IS NOT NULL;

-- One row for the trace, one per step, and one per top op, each with the guide's reading.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_overhead_vs_compute(
  -- Self CPU at least this many times self device time reads overhead-bound.
  overhead_ratio DOUBLE,
  -- Without device activity, outermost ATen calls shorter than this count as overhead-sized.
  small_op DURATION,
  -- Op rows to list (by self CPU plus self device time)
  top_ops LONG
)
RETURNS TABLE(
  -- trace, step or op.
  level STRING,
  -- Step number for step rows, else NULL.
  step LONG,
  -- Op name for op rows, else NULL.
  name STRING,
  -- Calls (op rows) or CPU events (trace and step rows).
  calls LONG,
  -- Self CPU total.
  self_cpu_dur DURATION,
  -- Self device total.
  self_device_dur DURATION,
  -- self_cpu_dur / self_device_dur, NULL without device time.
  cpu_device_ratio DOUBLE,
  -- Share of calls shorter than small_op (trace and step rows: outermost ATen calls; op rows: the
  -- op's calls), %.
  small_call_pct DOUBLE,
  -- overhead-bound or compute-bound; op rows also `cpu-only op` (no device time in a GPU trace) and, in
  -- a CPU-only trace, `small calls` / `large calls` (the trace and step rows carry the reading there).
  reading STRING,
  -- One sentence with the numbers.
  evidence STRING
) AS
WITH
  has_device AS (
    SELECT EXISTS (SELECT 1 FROM kineto_kernels) AS yes
  ),
  cpu_by AS (
    SELECT
      'trace' AS level,
      NULL AS step,
      NULL AS name,
      count(*) AS calls,
      sum(self_dur) AS self_cpu,
      sum(is_outer) AS outer_calls,
      sum(is_outer AND dur < $small_op) AS small_calls
    FROM _kineto_guide_ovc_cpu
    UNION ALL
    SELECT
      'step',
      step,
      NULL,
      count(*),
      sum(self_dur),
      sum(is_outer),
      sum(is_outer AND dur < $small_op)
    FROM _kineto_guide_ovc_cpu
    WHERE
      step IS NOT NULL
    GROUP BY step
    UNION ALL
    SELECT
      'op',
      NULL,
      name,
      count(*),
      sum(self_dur),
      count(*),
      sum(dur < $small_op)
    FROM _kineto_guide_ovc_cpu
    WHERE
      NOT name GLOB 'ProfilerStep#*'
    GROUP BY name
  ),
  dev_by AS (
    SELECT 'trace' AS level, NULL AS step, NULL AS name, sum(dur) AS self_device
    FROM _kineto_guide_ovc_device
    UNION ALL
    SELECT 'step', step, NULL, sum(dur)
    FROM _kineto_guide_ovc_device
    WHERE
      step IS NOT NULL
    GROUP BY step
    UNION ALL
    SELECT 'op', NULL, name, sum(dur)
    FROM _kineto_guide_ovc_device
    WHERE
      name IS NOT NULL
    GROUP BY name
  ),
  joined AS (
    SELECT
      c.level,
      c.step,
      c.name,
      c.calls,
      c.self_cpu,
      coalesce(d.self_device, 0) AS self_device,
      CASE WHEN c.outer_calls > 0 THEN 100.0 * c.small_calls / c.outer_calls END AS small_pct,
      (SELECT yes FROM has_device) AS has_device
    FROM cpu_by AS c
    LEFT JOIN dev_by AS d
      ON d.level = c.level
      AND d.step IS c.step
      AND d.name IS c.name
  ),
  ranked AS (
    SELECT
      j.*,
      CASE
        WHEN j.level = 'op'
          THEN row_number() OVER (
            PARTITION BY j.level
            ORDER BY j.self_cpu + j.self_device DESC, j.name
          )
      END AS op_rank,
      CASE WHEN j.self_device > 0 THEN round(1.0 * j.self_cpu / j.self_device, 2) END AS ratio
    FROM joined AS j
  ),
  read AS (
    SELECT
      r.*,
      CASE
        WHEN r.has_device AND r.self_device > 0
          THEN CASE WHEN r.ratio >= $overhead_ratio THEN 'overhead-bound' ELSE 'compute-bound' END
        WHEN r.has_device AND r.level = 'op' THEN 'cpu-only op'
        WHEN r.has_device THEN 'overhead-bound'
        WHEN r.level = 'op' THEN CASE WHEN coalesce(r.small_pct, 0) >= 50 THEN 'small calls' ELSE 'large calls' END
        WHEN coalesce(r.small_pct, 0) >= 50 THEN 'overhead-bound'
        ELSE 'compute-bound'
      END AS reading
    FROM ranked AS r
    WHERE
      r.level != 'op'
      OR r.op_rank <= $top_ops
  )
SELECT
  level,
  step,
  name,
  calls,
  self_cpu AS self_cpu_dur,
  self_device AS self_device_dur,
  ratio AS cpu_device_ratio,
  round(small_pct, 1) AS small_call_pct,
  reading,
  CASE
    WHEN has_device
      THEN printf(
        '%s: self CPU %.3f ms vs self device %.3f ms (%s): %s',
        CASE level WHEN 'trace' THEN 'trace' WHEN 'step' THEN 'step ' || step ELSE name END,
        self_cpu / 1e6,
        self_device / 1e6,
        coalesce(printf('ratio %.2f', ratio), 'no device time'),
        CASE reading
          WHEN 'overhead-bound' THEN 'the CPU spends longer preparing and launching than the device computes (overhead-bound; larger work per op or fusion)'
          WHEN 'compute-bound' THEN 'device time is comparable to or above CPU time (compute-bound)'
          ELSE 'host-side op with no device work of its own'
        END
      )
    ELSE printf(
      '%s: CPU-only trace, self CPU %.3f ms, %.0f%% of %s under %g us: %s',
      CASE level WHEN 'trace' THEN 'trace' WHEN 'step' THEN 'step ' || step ELSE name END,
      self_cpu / 1e6,
      coalesce(small_pct, 0),
      CASE level WHEN 'op' THEN 'its calls' ELSE 'outermost ATen calls' END,
      $small_op / 1e3,
      CASE reading
        WHEN 'overhead-bound' THEN 'per-call dispatch overhead dominates (overhead-bound; larger work per op or fusion)'
        WHEN 'small calls' THEN 'most calls are overhead-sized'
        WHEN 'large calls' THEN 'most calls are long enough that the work dominates'
        ELSE 'calls are long enough that the work dominates (compute-bound)'
      END
    )
  END AS evidence
FROM read
ORDER BY
  CASE level WHEN 'trace' THEN 0 WHEN 'step' THEN 1 ELSE 2 END,
  step,
  op_rank;
