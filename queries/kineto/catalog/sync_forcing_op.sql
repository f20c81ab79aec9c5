-- id: catalog.sync_forcing_op
-- version: 5
-- kind: detector
-- title: Sync-forcing op in the hot loop: host syncs (or host reads of device values) in every step
-- source: seed 000 section 3, major fault "Sync-forcing op in hot loop"
-- signature: cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize (hip* alike) beneath
--   aten::item / aten::_local_scalar_dense / aten::nonzero / .cpu(); on a CPU-only capture the host-read ops
--   themselves (each one is a full device sync once the same code runs on a GPU), except the reads that
--   composite ops such as aten::std make inside their CPU kernels (kineto.lib.internal_reads).
-- confirming: count per step >= 1; per step the ops that synced, the python line that called the first
--   one (when stacks were recorded), and the GPU idle time that opened while the host waited.
-- cost: a sync stops the host until the device queue drains: the host cannot run ahead, so every launch after
--   it is exposed and the GPU idles while Python catches up. impact_dur is the GPU idle time that opened
--   during the syncs (GPU traces), else the host time in the reads.
-- false_positives: a sync once per step for logging a loss is often deliberate and cheap on a long step; on
--   CPU-only captures the host reads cost nothing there and fire as a warning for the GPU run.
-- example: counts_syncs_per_step
-- fix: (each row carries the fix for its cause: host read, copy, dynamic shape, explicit sync, harness
--   timer) defer host reads (log every N steps), vectorize the condition on device (torch.where, masks),
--   compute metrics asynchronously (non_blocking copies into pinned memory, read a step later).
-- needs: none
-- status: stable
-- catalog_row: major.sync_forcing_op
-- default min_per_step: 1
-- locked: 5 c5da36008e8172db
-- lib: lib.cpu_ops@2 lib.device_busy@1 lib.event_categories@1 lib.gpu_idle@1 lib.host_slices@1
--   lib.host_tree@1 lib.internal_reads@1 lib.kernels@2 lib.python_frames@1 lib.steps@3 lib.stream_busy@1
-- cases: counts_syncs_per_step=d9f0440e threshold_1=a4c01742 threshold_2=edef7272
--   cpu_only_host_reads=4e323cc1 internal_read_of_std_is_not_a_sync=7ea2c03e
--   cause_copy_explicit_and_harness=bca761eb

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.steps;
INCLUDE PERFETTO MODULE kineto.lib.cpu_ops;
INCLUDE PERFETTO MODULE kineto.lib.gpu_idle;
INCLUDE PERFETTO MODULE kineto.lib.python_frames;
INCLUDE PERFETTO MODULE kineto.lib.internal_reads;

-- Host-side sync points: blocking runtime calls (GPU traces), or, on traces without any runtime
-- activity (CPU-only captures), the ATen host reads that would block on a device.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_sync_events(
  -- Slice id of the runtime call or host-read op.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration (host time blocked).
  dur DURATION,
  -- Runtime API name or op name.
  name STRING,
  -- `runtime` (a blocking runtime call) or `host_read` (an ATen host read, CPU-only trace).
  source STRING,
  -- The innermost CPU op around the call (the op that forced it), or the op itself.
  op_name STRING,
  -- Process.
  upid JOINID(process.id),
  -- Step number, or NULL outside steps.
  step LONG
) AS
WITH
  runtime_calls AS (
    SELECT s.id, s.ts, s.dur, s.name, t.upid
    FROM slice AS s
    JOIN kineto_event_categories AS c
      ON c.category = s.category
    JOIN thread_track AS tt
      ON tt.id = s.track_id
    JOIN thread AS t
      USING (utid)
    WHERE
      c.event_class = 'runtime'
  ),
  has_runtime AS (
    SELECT EXISTS (SELECT 1 FROM runtime_calls) AS yes
  ),
  optimizer_steps AS MATERIALIZED (
    SELECT a.upid, a.ts, a.dur
    FROM kineto_cpu_ops AS a
    WHERE
      a.is_annotation
      AND a.name GLOB 'Optimizer.step#*'
  ),
  blocking AS (
    SELECT
      r.id,
      r.ts,
      r.dur,
      r.name,
      'runtime' AS source,
      coalesce(
        (
          SELECT a.name
          FROM ancestor_slice(r.id) AS a
          WHERE
            a.name IN (
              'aten::item', 'aten::is_nonzero', 'aten::nonzero', 'aten::masked_select', 'aten::to',
              'aten::equal', 'aten::_unique2', 'aten::unique_consecutive', 'aten::repeat_interleave'
            )
          ORDER BY a.depth
          LIMIT 1
        ),
        (
          SELECT a.name
          FROM ancestor_slice(r.id) AS a
          WHERE
            a.category IN ('cpu_op', 'Operator')
          ORDER BY a.depth DESC
          LIMIT 1
        )
      ) AS op_name,
      r.upid
    FROM runtime_calls AS r
    WHERE
      r.name GLOB 'cudaStreamSynchronize*'
      OR r.name GLOB 'cudaDeviceSynchronize*'
      OR r.name GLOB 'cudaEventSynchronize*'
      OR r.name GLOB 'cuStreamSynchronize*'
      OR r.name GLOB 'cuCtxSynchronize*'
      OR r.name GLOB 'cuEventSynchronize*'
      OR r.name GLOB 'hipStreamSynchronize*'
      OR r.name GLOB 'hipDeviceSynchronize*'
      OR r.name GLOB 'hipEventSynchronize*'
      OR r.name = 'cudaMemcpy'
      OR r.name = 'hipMemcpy'
  ),
  host_reads AS (
    SELECT
      o.id,
      o.ts,
      o.dur,
      o.name,
      'host_read' AS source,
      o.name AS op_name,
      o.upid
    FROM kineto_cpu_ops AS o
    WHERE
      NOT (SELECT yes FROM has_runtime)
      AND o.name IN ('aten::_local_scalar_dense', 'aten::nonzero', 'aten::masked_select')
      -- torch.optim reads its per-parameter `step` counters (CPU tensors unless capturable) with
      -- .item(): not a device sync on any machine, so reads inside Optimizer.step are left out.
      AND NOT EXISTS (
        SELECT 1
        FROM optimizer_steps AS a
        WHERE
          a.upid = o.upid
          AND o.ts >= a.ts
          AND o.ts < a.ts + a.dur
      )
      -- A read inside a composite op that reads internally on CPU only (aten::std ->
      -- aten::item): the op's implementation, not the user's .item() (kineto.lib.internal_reads).
      AND NOT EXISTS (
        SELECT 1
        FROM ancestor_slice(o.id) AS a
        JOIN kineto_internal_reads AS r
          USING (name)
      )
  ),
  events AS (
    SELECT * FROM blocking
    UNION ALL
    SELECT * FROM host_reads
  ),
  steps_of AS (
    SELECT id, step FROM _kineto_steps_of!(events)
  )
SELECT
  e.id,
  e.ts,
  e.dur,
  e.name,
  e.source,
  e.op_name,
  e.upid,
  so.step
FROM events AS e
LEFT JOIN steps_of AS so
  USING (id);

-- One row per step (or one for the whole trace when it has no ProfilerStep) holding at least
-- `min_per_step` host sync points.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_sync_forcing_op(
  -- A step fires with at least this many syncs (seed: count per step >= 1)
  min_per_step LONG
)
RETURNS TABLE(
  -- First sync point of the step.
  ts TIMESTAMP,
  -- From the first sync point to the end of the last.
  dur DURATION,
  -- GPU idle time that opened during the syncs (GPU traces), else host time spent in the reads.
  impact_dur DURATION,
  -- Step number, or NULL when the trace has no ProfilerStep.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Sync points in the step.
  sync_count LONG,
  -- `runtime` (blocking runtime calls) or `host_read` (CPU-only capture: ATen host reads).
  source STRING,
  -- Host time blocked in them.
  blocked_dur DURATION,
  -- Device idle time that started while the host was blocked (NULL without GPU activity).
  gpu_idle_dur DURATION,
  -- The ops that forced them, with counts, e.g. `aten::_local_scalar_dense x3`.
  ops STRING,
  -- The user python line above the first one (NULL without stacks).
  python_line STRING,
  -- What forced most of the step's syncs: host_read (.item() and friends), copy (a device-to-host or
  -- blocking copy), dynamic_shape (nonzero, masked_select, unique, repeat_interleave), explicit (a
  -- synchronize call under no ATen op) or harness (every sync of the step is an explicit one inside a
  -- timing or profiling wrapper; harness syncs never decide the cause of a mixed step).
  cause STRING,
  -- The fix for that cause.
  fix STRING,
  -- `low` for harness syncs (they time the step; not a fault of the model), else NULL.
  max_severity STRING
) AS
WITH
  idle AS (
    SELECT ts, dur FROM kineto_gpu_idle WHERE stream IS NULL
  ),
  per_event AS (
    SELECT
      e.*,
      (
        SELECT sum(g.dur)
        FROM idle AS g
        WHERE
          g.ts >= e.ts
          AND g.ts <= e.ts + e.dur
      ) AS idle_dur,
      row_number() OVER (PARTITION BY e.step ORDER BY e.ts) AS rn,
      -- An explicit synchronize (under no ATen op) called from a timing or profiling wrapper: the
      -- harness measuring the step (torch.utils.benchmark, triton's do_bench, timeit, a timer / timed /
      -- measure function, the script that drives the profiler), not the model.
      CASE
        WHEN e.op_name IS NULL AND e.source = 'runtime' THEN EXISTS (
          SELECT 1
          FROM kineto_python_frames(e.id) AS f
          WHERE
            lower(f.frame) GLOB '*benchmark*'
            OR lower(f.frame) GLOB '*timeit*'
            OR lower(f.frame) GLOB '*do_bench*'
            OR lower(f.frame) GLOB '*): time*'
            OR lower(f.frame) GLOB '*timer*'
            OR lower(f.frame) GLOB '*): measure*'
            OR lower(f.frame) GLOB '*profil*'
        )
        ELSE 0
      END AS is_harness
    FROM _kineto_catalog_sync_events AS e
  ),
  op_counts AS (
    SELECT step, coalesce(op_name, name) AS op, count(*) AS n
    FROM per_event
    GROUP BY step, coalesce(op_name, name)
  ),
  op_text AS (
    SELECT step, group_concat(op || ' x' || n, ', ') AS ops
    FROM (SELECT * FROM op_counts ORDER BY n DESC, op)
    GROUP BY step
  ),
  per_step AS (
    SELECT
      step,
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS dur,
      count(*) AS sync_count,
      max(source) AS source,
      sum(dur) AS blocked_dur,
      sum(idle_dur) AS gpu_idle_dur,
      max(CASE WHEN rn = 1 THEN id END) AS first_id
    FROM per_event
    GROUP BY step
  ),
  causes AS (
    SELECT
      step,
      sum(op_name IN ('aten::item', 'aten::_local_scalar_dense', 'aten::is_nonzero', 'aten::equal')) AS n_read,
      sum(op_name IN ('aten::to', 'aten::_to_copy', 'aten::copy_') OR name IN ('cudaMemcpy', 'hipMemcpy')) AS n_copy,
      sum(
        op_name IN (
          'aten::nonzero', 'aten::masked_select', 'aten::_unique2', 'aten::unique_consecutive',
          'aten::repeat_interleave'
        )
      ) AS n_shape,
      sum(op_name IS NULL AND name NOT IN ('cudaMemcpy', 'hipMemcpy') AND NOT is_harness) AS n_explicit,
      sum(is_harness) AS n_harness,
      count(*) AS n
    FROM per_event
    GROUP BY step
  ),
  with_line AS (
    SELECT
      p.*,
      (
        SELECT f.frame
        FROM kineto_python_frames(p.first_id) AS f
        WHERE
          f.frame GLOB '*.py(*'
          AND NOT f.frame GLOB '*torch/*'
          AND NOT f.frame GLOB '*site-packages/*'
        ORDER BY f.distance
        LIMIT 1
      ) AS python_line
    FROM per_step AS p
  ),
  classified AS (
    SELECT
      w.*,
      CASE
        WHEN c.n_harness = c.n THEN 'harness'
        WHEN c.n_read >= max(c.n_copy, c.n_shape, c.n_explicit) AND c.n_read > 0 THEN 'host_read'
        WHEN c.n_copy >= max(c.n_shape, c.n_explicit) AND c.n_copy > 0 THEN 'copy'
        WHEN c.n_shape >= c.n_explicit AND c.n_shape > 0 THEN 'dynamic_shape'
        ELSE 'explicit'
      END AS cause
    FROM with_line AS w
    LEFT JOIN causes AS c
      ON c.step IS w.step
  )
SELECT
  w.ts,
  w.dur,
  CASE WHEN w.source = 'runtime' THEN coalesce(w.gpu_idle_dur, w.blocked_dur) ELSE w.blocked_dur END AS impact_dur,
  w.step,
  printf(
    '%s%d %s (%s)%s; host blocked %.3f ms%s.',
    CASE WHEN w.step IS NULL THEN 'Whole trace (no ProfilerStep): ' ELSE 'Step ' || w.step || ': ' END,
    w.sync_count,
    CASE
      WHEN w.source = 'runtime' THEN 'blocking host syncs'
      ELSE 'host reads of tensor values (CPU-only capture: each is a device sync when run on a GPU)'
    END,
    o.ops,
    CASE WHEN w.python_line IS NOT NULL THEN ', first from ' || w.python_line ELSE '' END,
    w.blocked_dur / 1e6,
    CASE
      WHEN w.gpu_idle_dur IS NOT NULL THEN printf(', GPU idle %.3f ms opened during them', w.gpu_idle_dur / 1e6)
      ELSE ''
    END
  ) AS evidence,
  w.sync_count,
  w.source,
  w.blocked_dur,
  w.gpu_idle_dur,
  o.ops,
  w.python_line,
  w.cause,
  CASE w.cause
    WHEN 'host_read' THEN 'Defer the read: keep losses and metrics on the device (accumulate in a tensor) and read them every N steps or one step late; replace Python branches on tensor values by torch.where / masks.'
    WHEN 'copy' THEN 'The sync is a copy to (or from pageable) host memory: copy into pinned memory with non_blocking=True (tensor.pin_memory(), DataLoader(pin_memory=True)) and read the result after the next step is queued.'
    WHEN 'dynamic_shape' THEN 'A data-dependent output size (nonzero, masked_select, unique, boolean indexing, repeat_interleave) is read from the device: keep shapes static (torch.where with masks, fixed-size buffers, output_size= for repeat_interleave).'
    WHEN 'harness' THEN 'These syncs sit in the timing harness that measures the step: not a fault of the model (honest wall-clock timing needs them); read the step times knowing they include the drain.'
    ELSE 'An explicit synchronize (torch.cuda.synchronize, stream or event synchronize) in the step: drop it from the training loop (work on one stream is ordered without it); keep it only to time a region, outside the steady-state loop.'
  END AS fix,
  CASE WHEN w.cause = 'harness' THEN 'low' END AS max_severity
FROM classified AS w
LEFT JOIN op_text AS o
  ON o.step IS w.step
WHERE
  w.sync_count >= $min_per_step
  AND (w.step IS NOT NULL OR NOT EXISTS (SELECT 1 FROM kineto_steps))
ORDER BY w.ts;
