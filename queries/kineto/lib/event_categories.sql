-- version: 4

-- The one place that maps raw Kineto event categories to what they are. Kineto changed its category
-- names over time (2021 `Operator`/`Runtime`/`Kernel`/`Memcpy`/`Memset`, later `cpu_op`/`cuda_runtime`/
-- `kernel`/`gpu_memcpy`/`gpu_memset`), and other back ends add their own (ROCm reuses the CUDA names,
-- MTIA writes `mtia_runtime`/`mtia_ccp_events`). Every lib module joins this table on `slice.category`
-- instead of repeating category lists. `[memory]` instants are matched by name (2021 traces give them no
-- category).

-- One row per known Kineto category.
CREATE OR REPLACE PERFETTO TABLE kineto_event_categories(
  -- The raw `slice.category` value.
  category STRING,
  -- What the events are: `cpu_op` (ATen ops and record_function / user annotations), `python`
  -- (python_function frames), `runtime` (CUDA/HIP/MTIA runtime and driver calls), `gpu` (kernels,
  -- memcpys, memsets and other device activities), `gpu_annotation` (user annotations copied onto a GPU
  -- stream; not device work), `instant` (CPU instant events such as `[memory]`), `profiler` (the
  -- profiler's own `overhead` events: activity buffer requests and flushes), `counter_range` (CUPTI range
  -- profiler ranges, `cuda_profiler_range`: hardware-counter values of a kernel or range, recorded by
  -- replaying it; no timing of the workload).
  event_class STRING,
  -- For `gpu` rows: `kernel`, `memcpy` or `memset`; NULL otherwise.
  gpu_kind STRING,
  -- True for record_function / user annotations (on the CPU: `user_annotation`; their GPU-stream copies:
  -- `gpu_user_annotation`), false for ATen ops and everything else.
  is_annotation BOOL
) AS
WITH rows(category, event_class, gpu_kind, is_annotation) AS (
  VALUES
    ('cpu_op', 'cpu_op', NULL, FALSE),
    ('Operator', 'cpu_op', NULL, FALSE),
    ('user_annotation', 'cpu_op', NULL, TRUE),
    ('hpu_op', 'cpu_op', NULL, FALSE),
    ('python_function', 'python', NULL, FALSE),
    ('cuda_runtime', 'runtime', NULL, FALSE),
    ('cuda_driver', 'runtime', NULL, FALSE),
    ('Runtime', 'runtime', NULL, FALSE),
    ('mtia_runtime', 'runtime', NULL, FALSE),
    ('xpu_runtime', 'runtime', NULL, FALSE),
    ('privateuse1_runtime', 'runtime', NULL, FALSE),
    ('privateuse1_driver', 'runtime', NULL, FALSE),
    ('kernel', 'gpu', 'kernel', FALSE),
    ('Kernel', 'gpu', 'kernel', FALSE),
    ('gpu_memcpy', 'gpu', 'memcpy', FALSE),
    ('Memcpy', 'gpu', 'memcpy', FALSE),
    ('gpu_memset', 'gpu', 'memset', FALSE),
    ('Memset', 'gpu', 'memset', FALSE),
    ('mtia_ccp_events', 'gpu', 'kernel', FALSE),
    ('gpu_user_annotation', 'gpu_annotation', NULL, TRUE),
    ('cpu_instant_event', 'instant', NULL, FALSE),
    ('overhead', 'profiler', NULL, FALSE),
    ('cuda_profiler_range', 'counter_range', NULL, FALSE)
)
SELECT
  category,
  event_class,
  gpu_kind,
  is_annotation
FROM rows;

-- Whether a host slice is a record_function / user annotation rather than an ATen op: its category says
-- so (`user_annotation`), or it is a ProfilerStep#N (which older Kineto versions write as a `cpu_op`).
CREATE OR REPLACE PERFETTO MACRO _kineto_is_host_annotation(
  -- The slice's raw category.
  category Expr,
  -- The slice's name.
  name Expr
)
RETURNS Expr AS
($category = 'user_annotation' OR $name GLOB 'ProfilerStep#[0-9]*');
