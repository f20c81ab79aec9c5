-- version: 1
-- locked: 1 cdbf3ccc620363f8

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
  -- stream; not device work), `instant` (CPU instant events such as `[memory]`).
  event_class STRING,
  -- For `gpu` rows: `kernel`, `memcpy` or `memset`; NULL otherwise.
  gpu_kind STRING
) AS
WITH rows(category, event_class, gpu_kind) AS (
  VALUES
    ('cpu_op', 'cpu_op', NULL),
    ('Operator', 'cpu_op', NULL),
    ('user_annotation', 'cpu_op', NULL),
    ('hpu_op', 'cpu_op', NULL),
    ('python_function', 'python', NULL),
    ('cuda_runtime', 'runtime', NULL),
    ('cuda_driver', 'runtime', NULL),
    ('Runtime', 'runtime', NULL),
    ('mtia_runtime', 'runtime', NULL),
    ('xpu_runtime', 'runtime', NULL),
    ('privateuse1_runtime', 'runtime', NULL),
    ('privateuse1_driver', 'runtime', NULL),
    ('kernel', 'gpu', 'kernel'),
    ('Kernel', 'gpu', 'kernel'),
    ('gpu_memcpy', 'gpu', 'memcpy'),
    ('Memcpy', 'gpu', 'memcpy'),
    ('gpu_memset', 'gpu', 'memset'),
    ('Memset', 'gpu', 'memset'),
    ('mtia_ccp_events', 'gpu', 'kernel'),
    ('gpu_user_annotation', 'gpu_annotation', NULL),
    ('cpu_instant_event', 'instant', NULL)
)
SELECT
  category,
  event_class,
  gpu_kind
FROM rows;
