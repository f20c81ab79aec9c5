-- id: catalog.cold_start
-- version: 4
-- kind: detector
-- title: Cold start: the first iteration pays one-time work (allocator warm-up, autotuning, lazy init) the steady state does not
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Cold-Start Overhead"
-- what: the first of several iterations is wider than 1.5x the median of the others (GC time not
--   counted: a GC pause is catalog.gc_gil_stall's), with cudaMalloc / cudaFree, cudnn autotuning event
--   syncs, module loading or compilation inside it; on a capture without launches, with host ops that no
--   later iteration runs (lazy init: the optimizer's state) making at least a tenth of the excess. A first
--   iteration that is merely wider is a slow step, not a cold start, whatever its position.
-- confirming: the cold iteration's width against the steady median, and which ledger buckets its excess
--   falls in (idle.alloc, idle.sync, idle.host_compute...).
-- why: none in the steady state: the time is paid once per process. impact_dur is the cold iteration's
--   excess over the steady median; diagnose keeps it out of the steady-state ranking, and every other
--   detector leaves cold iterations out, so syncs or allocations of the first iteration are never read as
--   "in every step".
-- known_problems: a capture whose first iteration does different work on purpose (evaluation, a larger
--   batch) is not a warm-up; a schedule without warmup makes the first active step cold by construction.
-- example: first_iteration_allocates
-- use_instead: nothing to fix in the training loop; profile with a warmup (schedule(wait=1, warmup=1+, active=N))
--   so the measured steps are steady, and, if start-up time matters, cache compiled kernels / autotuning
--   results (torch.backends.cudnn.benchmark results, the inductor cache) and preallocate.
-- needs: none
-- claims: cold
-- status: preview

INCLUDE PERFETTO MODULE kineto.lib.ledger_windows;
INCLUDE PERFETTO MODULE kineto.lib.ledger_window_buckets;
INCLUDE PERFETTO MODULE kineto.lib.ledger_claim;

-- Buckets of the cold windows against the steady mean, for the evidence.
CREATE OR REPLACE PERFETTO TABLE _kineto_catalog_cold_start_excess(
  -- Cold window id.
  window_id LONG,
  -- Bucket.
  bucket STRING,
  -- Bucket time in the cold window minus its mean per steady window.
  excess_dur DURATION
) AS
WITH
  steady_n AS (
    SELECT count(*) AS n FROM kineto_ledger_windows WHERE NOT is_cold
  ),
  steady AS (
    SELECT bucket, 1.0 * sum(dur) / (SELECT n FROM steady_n) AS mean_dur
    FROM kineto_ledger_window_buckets
    WHERE
      NOT is_cold
    GROUP BY bucket
  ),
  cold AS (
    SELECT window_id, bucket, sum(dur) AS dur FROM kineto_ledger_claim_buckets('cold') GROUP BY 1, 2
  )
SELECT c.window_id, c.bucket, CAST(c.dur - coalesce(s.mean_dur, 0) AS INT) AS excess_dur
FROM cold AS c
LEFT JOIN steady AS s
  USING (bucket);

-- One row per cold iteration.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_cold_start()
RETURNS TABLE(
  -- Cold iteration start.
  ts TIMESTAMP,
  -- Its width.
  dur DURATION,
  -- Its excess over the steady median width (one-time time, outside the steady state).
  impact_dur DURATION,
  -- Iteration number.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- Median width of the steady iterations.
  steady_median_dur DURATION,
  -- The bucket holding most of the excess.
  top_bucket STRING,
  -- Its excess.
  top_excess_dur DURATION
) AS
WITH
  steady AS (
    SELECT window_id, window_dur FROM kineto_ledger_windows WHERE NOT is_cold
  ),
  ranked AS (
    SELECT
      window_dur,
      row_number() OVER (ORDER BY window_dur) AS k,
      count(*) OVER () AS m
    FROM steady
  ),
  median AS (
    SELECT CAST(avg(window_dur) AS INT) AS dur FROM ranked WHERE k IN ((m + 1) / 2, (m + 2) / 2)
  ),
  cold AS (
    SELECT window_id, step, noun, window_ts, window_dur FROM kineto_ledger_claim('cold') WHERE is_cold
  ),
  top AS (
    SELECT window_id, bucket, excess_dur
    FROM (
      SELECT e.*, row_number() OVER (PARTITION BY e.window_id ORDER BY e.excess_dur DESC, e.bucket) AS rn
      FROM _kineto_catalog_cold_start_excess AS e
    )
    WHERE
      rn = 1
  )
SELECT
  c.window_ts AS ts,
  c.window_dur AS dur,
  max(c.window_dur - (SELECT dur FROM median), 0) AS impact_dur,
  c.step,
  printf(
    '%s %d is a cold start: %.3f ms against a steady median of %.3f ms, so %.3f ms of one-time work (most of it %s, %.3f ms more than a steady %s); kept out of the steady-state findings.',
    c.noun,
    c.step,
    c.window_dur / 1e6,
    (SELECT dur FROM median) / 1e6,
    max(c.window_dur - (SELECT dur FROM median), 0) / 1e6,
    t.bucket,
    t.excess_dur / 1e6,
    lower(c.noun)
  ) AS evidence,
  (SELECT dur FROM median) AS steady_median_dur,
  t.bucket AS top_bucket,
  t.excess_dur AS top_excess_dur
FROM cold AS c
LEFT JOIN top AS t
  USING (window_id)
ORDER BY c.window_ts;
