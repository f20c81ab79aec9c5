-- id: catalog.sync_forcing_op
-- version: 8
-- kind: detector
-- title: Sync-forcing op in the hot loop: host syncs (or host reads of device values) in every step
-- references: "torch.profiler & HTA: the Framework View", Fault catalog, major fault "Sync-forcing op in hot
--   loop"
-- what: cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize (hip* alike) beneath
--   aten::item / aten::_local_scalar_dense / aten::nonzero / .cpu(); on a CPU-only capture the host-read ops
--   themselves (each one is a full device sync once the same code runs on a GPU), except the reads that
--   composite ops such as aten::std make inside their CPU kernels (kineto.lib.internal_reads).
-- confirming: count per steady iteration >= 1; per iteration the ops that synced, the python line that
--   called the first one (when stacks were recorded), and the device idle time that overlaps the waits.
-- why: a sync stops the host until the device queue drains, and the device runs dry while the host waits.
--   impact_dur is the ledger's idle.sync (device idle while the host sat in a synchronize; reading.step_ledger)
--   or, on a capture without device activity, host.sync_read (host time inside the reads): only the idle that
--   overlaps a wait, never a whole idle gap that merely begins in one. The idle after the sync, while the host
--   catches up, is the next bucket's (launch or host compute). Blocking copies are catalog.blocking_copy;
--   cold iterations are catalog.cold_start.
-- known_problems: a sync once per step for logging a loss is often deliberate and cheap on a long step; on
--   CPU-only captures the host reads cost nothing there and fire as a warning for the GPU run.
-- example: counts_syncs_per_step
-- use_instead: (each row carries the fix for its cause: host read, copy, dynamic shape, explicit sync, harness
--   timer) defer host reads (log every N steps), vectorize the condition on device (torch.where, masks),
--   compute metrics asynchronously (non_blocking copies into pinned memory, read a step later).
-- needs: none
-- claims: idle.sync, host.sync_read
-- status: stable
-- catalog_row: major.sync_forcing_op
-- default min_per_step: 1

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.enclosing_op;
INCLUDE PERFETTO MODULE kineto.lib.thread_slices;
INCLUDE PERFETTO MODULE kineto.lib.runtime_calls;
INCLUDE PERFETTO MODULE kineto.lib.iterations;
INCLUDE PERFETTO MODULE kineto.lib.window_of;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;
INCLUDE PERFETTO MODULE kineto.lib.python_frames;
INCLUDE PERFETTO MODULE kineto.lib.internal_reads;

-- Host-side sync points: synchronize calls (GPU traces), or, on traces without any runtime activity
-- (CPU-only captures), the ATen host reads that would block on a device, outside Optimizer.step.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_sync_events(
  -- Slice id of the runtime call or host-read op.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- Duration (host time blocked).
  dur DURATION,
  -- Runtime API name or op name.
  name STRING,
  -- `runtime` (a synchronize call) or `host_read` (an ATen host read, CPU-only trace).
  source STRING,
  -- Process.
  upid JOINID(process.id)
) AS
WITH
  has_runtime AS (
    SELECT EXISTS (SELECT 1 FROM kineto_runtime_calls) AS yes
  ),
  syncs AS (
    SELECT r.id, r.ts, r.dur, r.name, 'runtime' AS source, r.upid
    FROM kineto_runtime_calls AS r
    WHERE
      r.class IN ('stream_sync', 'device_sync', 'event_sync')
  ),
  host_ops AS (
    SELECT s.id, s.ts, s.dur, s.name, s.upid
    FROM kineto_thread_slices AS s
    WHERE
      NOT (SELECT yes FROM has_runtime)
      AND s.event_class = 'cpu_op'
      AND (
        s.name IN ('aten::_local_scalar_dense', 'aten::nonzero', 'aten::masked_select')
        OR s.name GLOB 'Optimizer.step#*'
        OR s.name IN (SELECT name FROM kineto_internal_reads)
      )
  ),
  -- Reads that are no device sync are left out, in one sorted pass: torch.optim reads its per-parameter
  -- `step` counters (CPU tensors unless capturable) with .item() inside Optimizer.step, and composite ops
  -- such as aten::std read inside their CPU kernels only (kineto.lib.internal_reads).
  marked AS (
    SELECT h.*, (h.name GLOB 'Optimizer.step#*' OR h.name IN (SELECT name FROM kineto_internal_reads)) AS excuses
    FROM host_ops AS h
  ),
  reads_swept AS (
    SELECT
      m.*,
      max(CASE WHEN m.excuses THEN m.ts + m.dur END) OVER (
        PARTITION BY m.upid
        ORDER BY m.ts, m.excuses DESC
        ROWS UNBOUNDED PRECEDING
      ) AS excuse_end
    FROM marked AS m
  ),
  host_reads AS (
    SELECT id, ts, dur, name, 'host_read' AS source, upid
    FROM reads_swept
    WHERE
      NOT excuses
      AND (excuse_end IS NULL OR ts >= excuse_end)
  )
SELECT id, ts, dur, name, source, upid FROM syncs
UNION ALL
SELECT id, ts, dur, name, source, upid FROM host_reads;

-- One row per steady iteration (kineto.lib.iterations, cold ones left out) holding at least
-- `min_per_step` host sync points.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_sync_forcing_op(
  -- An iteration fires with at least this many syncs (seed: count per step >= 1).
  min_per_step LONG
)
RETURNS TABLE(
  -- First sync point of the iteration.
  ts TIMESTAMP,
  -- From the first sync point to the end of the last.
  dur DURATION,
  -- Step time claimed: ledger idle.sync (device traces) or host.sync_read (host-only) of the iteration.
  impact_dur DURATION,
  -- Iteration number (ProfilerStep#N, else the inferred iteration).
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Sync points in the iteration.
  sync_count LONG,
  -- `runtime` (synchronize calls) or `host_read` (CPU-only capture: ATen host reads).
  source STRING,
  -- Host time blocked in them.
  blocked_dur DURATION,
  -- Device idle time that overlaps the waits (NULL without device activity).
  gpu_idle_dur DURATION,
  -- Iteration width.
  step_dur DURATION,
  -- The ops that forced them, with counts, e.g. `aten::_local_scalar_dense x3`.
  ops STRING,
  -- The user python line above the first one (NULL without stacks).
  python_line STRING,
  -- What forced most of the iteration's syncs: host_read (.item() and friends), copy (a device-to-host
  -- copy), dynamic_shape (nonzero, masked_select, unique, repeat_interleave), explicit (a synchronize call
  -- under no ATen op) or harness (every sync of the iteration is an explicit one inside a timing or
  -- profiling wrapper; harness syncs never decide the cause of a mixed iteration).
  cause STRING,
  -- The fix for that cause.
  fix STRING,
  -- `low` for harness syncs (they time the step; not a fault of the model), else NULL.
  max_severity STRING
) AS
WITH
  placed AS (
    SELECT e.*, w.window_id, w.step
    FROM _kineto_catalog_sync_events AS e
    JOIN kineto_window_of!(_kineto_catalog_sync_events) AS w
      USING (id)
    WHERE
      NOT w.is_cold
  ),
  with_op AS (
    SELECT
      p.*,
      CASE
        WHEN p.source = 'host_read' THEN p.name
        ELSE coalesce(
          (
            SELECT a.name
            FROM ancestor_slice(p.id) AS a
            WHERE
              a.name IN (
                'aten::item', 'aten::is_nonzero', 'aten::nonzero', 'aten::masked_select', 'aten::to',
                'aten::equal', 'aten::_unique2', 'aten::unique_consecutive', 'aten::repeat_interleave'
              )
            ORDER BY a.depth
            LIMIT 1
          ),
          (SELECT s.name FROM slice AS s WHERE s.id = kineto_enclosing_op!(p.id, TRUE, TRUE))
        )
      END AS op_name,
      row_number() OVER (PARTITION BY p.window_id ORDER BY p.ts) AS rn
    FROM placed AS p
  ),
  -- An explicit synchronize (under no ATen op) called from a timing or profiling wrapper: the harness
  -- measuring the step (torch.utils.benchmark, triton's do_bench, timeit, a timer / timed / measure
  -- function, the script that drives the profiler), not the model.
  with_harness AS (
    SELECT
      o.*,
      CASE
        WHEN o.op_name IS NULL AND o.source = 'runtime' THEN EXISTS (
          SELECT 1
          FROM kineto_python_frames(o.id) AS f
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
    FROM with_op AS o
  ),
  causes AS (
    SELECT
      window_id,
      sum(op_name IN ('aten::item', 'aten::_local_scalar_dense', 'aten::is_nonzero', 'aten::equal')) AS n_read,
      sum(op_name IN ('aten::to', 'aten::_to_copy', 'aten::copy_')) AS n_copy,
      sum(
        op_name IN (
          'aten::nonzero', 'aten::masked_select', 'aten::_unique2', 'aten::unique_consecutive',
          'aten::repeat_interleave'
        )
      ) AS n_shape,
      sum(op_name IS NULL AND NOT is_harness) AS n_explicit,
      sum(is_harness) AS n_harness,
      count(*) AS n
    FROM with_harness
    GROUP BY window_id
  ),
  op_counts AS (
    SELECT window_id, coalesce(op_name, name) AS op, count(*) AS n
    FROM with_op
    GROUP BY window_id, coalesce(op_name, name)
  ),
  op_text AS (
    SELECT window_id, group_concat(op || ' x' || n, ', ') AS ops
    FROM (SELECT * FROM op_counts ORDER BY n DESC, op)
    GROUP BY window_id
  ),
  per_window AS (
    SELECT
      window_id,
      step,
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS dur,
      count(*) AS sync_count,
      max(source) AS source,
      sum(dur) AS blocked_dur,
      max(CASE WHEN rn = 1 THEN id END) AS first_id
    FROM with_op
    GROUP BY window_id, step
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
    FROM per_window AS p
  )
SELECT
  w.ts,
  w.dur,
  c.claim_dur AS impact_dur,
  w.step,
  printf(
    '%s %d: %d %s (%s)%s; host blocked %.3f ms%s.',
    c.noun,
    w.step,
    w.sync_count,
    CASE
      WHEN w.source = 'runtime' THEN 'blocking host syncs'
      ELSE 'host reads of tensor values (CPU-only capture: each is a device sync when run on a GPU)'
    END,
    o.ops,
    CASE WHEN w.python_line IS NOT NULL THEN ', first from ' || w.python_line ELSE '' END,
    w.blocked_dur / 1e6,
    CASE
      WHEN w.source = 'runtime' THEN printf(
        ', the GPU idle %.3f ms of it (%.1f%% of the %.3f ms %s)',
        c.claim_dur / 1e6,
        100.0 * c.claim_dur / c.window_dur,
        c.window_dur / 1e6,
        lower(c.noun)
      )
      ELSE printf(
        ' (%.1f%% of the %.3f ms %s)', 100.0 * c.claim_dur / c.window_dur, c.window_dur / 1e6, lower(c.noun)
      )
    END
  ) AS evidence,
  w.sync_count,
  w.source,
  w.blocked_dur,
  CASE WHEN c.has_device AND c.claim_dur > 0 THEN c.claim_dur END AS gpu_idle_dur,
  c.window_dur AS step_dur,
  o.ops,
  w.python_line,
  ca.cause,
  CASE ca.cause
    WHEN 'host_read' THEN 'Defer the read: keep losses and metrics on the device (accumulate in a tensor) and read them every N steps or one step late; replace Python branches on tensor values by torch.where / masks.'
    WHEN 'copy' THEN 'The sync is a copy to host memory: copy into pinned memory with non_blocking=True (tensor.pin_memory(), DataLoader(pin_memory=True)) and read the result after the next step is queued.'
    WHEN 'dynamic_shape' THEN 'A data-dependent output size (nonzero, masked_select, unique, boolean indexing, repeat_interleave) is read from the device: keep shapes static (torch.where with masks, fixed-size buffers, output_size= for repeat_interleave).'
    WHEN 'harness' THEN 'These syncs sit in the timing harness that measures the step: not a fault of the model (honest wall-clock timing needs them); read the step times knowing they include the drain.'
    ELSE 'An explicit synchronize (torch.cuda.synchronize, stream or event synchronize) in the step: drop it from the training loop (work on one stream is ordered without it); keep it only to time a region, outside the steady-state loop.'
  END AS fix,
  CASE WHEN ca.cause = 'harness' THEN 'low' END AS max_severity
FROM with_line AS w
LEFT JOIN op_text AS o
  USING (window_id)
JOIN kineto_ledger_claim('idle.sync, host.sync_read') AS c
  USING (window_id)
LEFT JOIN (
  SELECT
    window_id,
    CASE
      WHEN n_harness = n THEN 'harness'
      WHEN n_read >= max(n_copy, n_shape, n_explicit) AND n_read > 0 THEN 'host_read'
      WHEN n_copy >= max(n_shape, n_explicit) AND n_copy > 0 THEN 'copy'
      WHEN n_shape >= n_explicit AND n_shape > 0 THEN 'dynamic_shape'
      ELSE 'explicit'
    END AS cause
  FROM causes
) AS ca
  USING (window_id)
WHERE
  w.sync_count >= $min_per_step
ORDER BY w.ts;
