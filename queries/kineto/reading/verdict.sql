-- id: reading.verdict
-- version: 5
-- kind: reading
-- title: Verdict: the step's regime (device-, host-, communication-bound or mixed) from the ledger, in one sentence
-- references: "torch.profiler & HTA: the Framework View", Reading order, step 1 (GPU sparse or dense), read
--   from reading.step_ledger
-- needs: none
-- status: preview

-- Shares are of the steady-state time: every (window, device) lane of reading.step_ledger except cold
-- windows. compute = device busy except exposed collectives (overlapped collectives count as compute: they
-- cost nothing by themselves); communication = exposed collective kernels plus device idle while the host
-- waits in a host-side collective; idle = the rest of device idle. The regime, first that applies:
--   device-bound          compute >= 80 %: the kernels themselves are the step (seed: GPU dense)
--   host-bound            idle >= 50 %: the device waits on the host more than it works (seed: GPU sparse)
--   communication-bound   communication >= 50 %, or >= 30 % and at least the idle share: collectives that
--                         nothing hides are the largest cost after compute
--   mixed                 none of these: the step is lost in several places (the findings say where)
-- A capture without device activity has a host-side ledger: communication-bound when host-side
-- collectives take >= 50 % of it, else host-bound (the host is the whole step).
-- The median window width is the mean of the two middle widths when the count is even. The top cause's
-- share is of the steady step time (every share is), and the sentence says so: it is not a share of the
-- idle time.
-- When the steady windows are too small a sample of the steady state (kineto.lib.steady_sample: fewer than
-- 3 of them holding under 10% of the windows' time, a capture that is mostly its cold start), the shares
-- and the regime are of every window, cold included, and the sentence says so: the steady part would
-- describe a sliver of the capture.

INCLUDE PERFETTO MODULE kineto.lib.ledger;
INCLUDE PERFETTO MODULE kineto.lib.ledger_buckets;
INCLUDE PERFETTO MODULE kineto.lib.steady_sample;
INCLUDE PERFETTO MODULE kineto.lib.device_compute;

-- One row: the verdict.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_verdict()
RETURNS TABLE(
  -- device-bound, host-bound, communication-bound or mixed.
  regime STRING,
  -- One sentence that states the regime and the numbers it follows from.
  sentence STRING,
  -- Where the windows came from (kineto_iterations.source of the steady windows).
  window_source STRING,
  -- Steady (not cold) windows.
  windows LONG,
  -- Cold windows, kept out of every share.
  cold_windows LONG,
  -- Their summed width.
  cold_dur DURATION,
  -- Median width of the steady windows (mean of the two middles when even).
  median_window_dur DURATION,
  -- Summed width of the steady windows.
  total_window_dur DURATION,
  -- Summed steady lane time (window width x devices): the denominator of every share.
  lane_dur DURATION,
  -- Devices with activity (0 for a capture without device activity).
  device_count LONG,
  -- Device compute share (busy except exposed collectives), %; NULL without devices.
  compute_pct DOUBLE,
  -- Communication share (exposed collectives + host-side collective waits), %.
  comm_pct DOUBLE,
  -- Device idle share, %; on a host-only ledger the share outside ATen ops and Python.
  idle_pct DOUBLE,
  -- Largest idle (or, host-only, waiting) cause bucket.
  top_cause STRING,
  -- Its share, %.
  top_cause_pct DOUBLE,
  -- FALSE when the steady windows are too small a sample (kineto.lib.steady_sample): the shares, lane_dur
  -- and the regime are then of every window, cold included.
  steady_representative BOOL,
  -- Why the steady sample is too small, in one sentence; NULL when it is a sample.
  sample_sentence STRING
) AS
WITH
  sample AS (
    SELECT coalesce((SELECT representative FROM kineto_steady_sample), TRUE) AS representative,
      (SELECT sentence FROM kineto_steady_sample) AS sentence
  ),
  -- the analysed lanes: the steady ones, or all of them when the steady sample is too small
  steady AS (
    SELECT * FROM kineto_ledger WHERE NOT is_cold OR NOT (SELECT representative FROM sample)
  ),
  lanes AS (
    SELECT sum(dur) AS lane_dur, count(DISTINCT device) AS device_count, max(device IS NOT NULL) AS has_device
    FROM steady
  ),
  shares AS (
    SELECT
      -- the devices' compute time (kineto.lib.device_compute: the one definition, per device there)
      100.0 * (SELECT coalesce(sum(compute_dur), 0) FROM kineto_device_compute)
        / (SELECT lane_dur FROM lanes) AS compute_pct,
      100.0 * sum(CASE WHEN bucket IN ('busy.comm_exposed', 'idle.comm_wait', 'host.comm_wait') THEN dur ELSE 0 END)
        / (SELECT lane_dur FROM lanes) AS comm_pct,
      100.0 * sum(
        CASE
          WHEN kind = 'idle' AND bucket != 'idle.comm_wait' THEN dur
          WHEN kind = 'host' AND bucket NOT IN ('host.ops', 'host.python', 'host.comm_wait') THEN dur
          ELSE 0
        END
      ) / (SELECT lane_dur FROM lanes) AS idle_pct,
      100.0 * sum(CASE WHEN bucket = 'host.ops' THEN dur ELSE 0 END) / (SELECT lane_dur FROM lanes) AS ops_pct,
      100.0 * sum(CASE WHEN bucket = 'host.python' THEN dur ELSE 0 END) / (SELECT lane_dur FROM lanes) AS python_pct
    FROM steady
  ),
  causes AS (
    SELECT bucket, 100.0 * sum(dur) / (SELECT lane_dur FROM lanes) AS pct
    FROM steady
    WHERE
      (kind = 'idle' AND bucket != 'idle.comm_wait')
      OR (kind = 'host' AND bucket NOT IN ('host.ops', 'host.python', 'host.comm_wait'))
    GROUP BY bucket
    ORDER BY pct DESC, bucket
    LIMIT 1
  ),
  windows AS (
    SELECT DISTINCT window_id, window_dur, is_cold, source FROM kineto_ledger
  ),
  steady_windows AS (
    SELECT
      window_dur,
      row_number() OVER (ORDER BY window_dur) AS k,
      count(*) OVER () AS m
    FROM windows
    WHERE
      NOT is_cold
  ),
  summary AS (
    SELECT
      (SELECT count(*) FROM windows WHERE NOT is_cold) AS n,
      (SELECT count(*) FROM windows WHERE is_cold) AS cold_n,
      (SELECT sum(window_dur) FROM windows WHERE is_cold) AS cold_dur,
      (SELECT sum(window_dur) FROM windows WHERE NOT is_cold) AS total_dur,
      (
        SELECT CAST(avg(window_dur) AS INT)
        FROM steady_windows
        WHERE
          k IN ((m + 1) / 2, (m + 2) / 2)
      ) AS median_dur,
      (SELECT group_concat(DISTINCT source) FROM windows WHERE NOT is_cold) AS source
  ),
  judged AS (
    SELECT
      s.*,
      su.*,
      l.*,
      sa.representative,
      sa.sentence AS sample_sentence,
      c.bucket AS top_cause,
      c.pct AS top_cause_pct,
      cw.words AS top_words,
      CASE
        WHEN NOT l.has_device THEN CASE WHEN s.comm_pct >= 50 THEN 'communication-bound' ELSE 'host-bound' END
        WHEN s.compute_pct >= 80 THEN 'device-bound'
        WHEN s.idle_pct >= 50 THEN 'host-bound'
        WHEN s.comm_pct >= 50 OR (s.comm_pct >= 30 AND s.comm_pct >= s.idle_pct) THEN 'communication-bound'
        ELSE 'mixed'
      END AS regime,
      CASE su.source
        WHEN 'profiler_step' THEN 'ProfilerStep'
        WHEN 'capture' THEN 'whole-capture'
        ELSE 'inferred (' || su.source || ')'
      END AS source_words
    FROM shares AS s, summary AS su, lanes AS l, sample AS sa
    LEFT JOIN causes AS c
      ON 1
    -- the words of the idle / host cause named in the sentence
    LEFT JOIN kineto_ledger_buckets AS cw
      ON cw.bucket = c.bucket
  )
SELECT
  j.regime,
  CASE
    WHEN j.has_device THEN printf(
      '%s: over %d steady %s window%s (median %.3f ms%s), the GPU computes %.0f%% of the time, exposed communication takes %.0f%% and the GPU is idle %.0f%%%s.',
      j.regime,
      j.n,
      j.source_words,
      CASE WHEN j.n = 1 THEN '' ELSE 's' END,
      j.median_dur / 1e6,
      CASE
        WHEN NOT j.representative
          THEN printf('; too small a sample: read with the %d cold window%s of %.3f ms', j.cold_n, CASE WHEN j.cold_n = 1 THEN '' ELSE 's' END, j.cold_dur / 1e6)
        WHEN j.cold_n > 0 THEN printf('; %d cold window of %.3f ms kept apart', j.cold_n, j.cold_dur / 1e6)
        ELSE ''
      END,
      j.compute_pct,
      j.comm_pct,
      j.idle_pct,
      CASE
        WHEN j.top_cause IS NOT NULL AND j.top_cause_pct >= 1
          THEN printf(
            ', mostly %s (%.0f%% of the %s)',
            j.top_words,
            j.top_cause_pct,
            CASE WHEN j.representative THEN 'steady step time' ELSE 'capture' END
          )
        ELSE ''
      END
    )
    ELSE printf(
      '%s: no device activity was recorded, so the host is the whole step: over %d steady %s window%s (median %.3f ms%s), ATen ops take %.0f%%, Python outside ops %.0f%%, host-side communication %.0f%% and waits %.0f%%%s.',
      j.regime,
      j.n,
      j.source_words,
      CASE WHEN j.n = 1 THEN '' ELSE 's' END,
      j.median_dur / 1e6,
      CASE
        WHEN NOT j.representative
          THEN printf('; too small a sample: read with the %d cold window%s of %.3f ms', j.cold_n, CASE WHEN j.cold_n = 1 THEN '' ELSE 's' END, j.cold_dur / 1e6)
        WHEN j.cold_n > 0 THEN printf('; %d cold window of %.3f ms kept apart', j.cold_n, j.cold_dur / 1e6)
        ELSE ''
      END,
      j.ops_pct,
      j.python_pct,
      j.comm_pct,
      j.idle_pct,
      CASE
        WHEN j.top_cause IS NOT NULL AND j.top_cause_pct >= 1
          THEN printf(
            ', mostly %s (%.0f%% of the %s)',
            j.top_words,
            j.top_cause_pct,
            CASE WHEN j.representative THEN 'steady step time' ELSE 'capture' END
          )
        ELSE ''
      END
    )
  END AS sentence,
  j.source AS window_source,
  j.n AS windows,
  j.cold_n AS cold_windows,
  coalesce(j.cold_dur, 0) AS cold_dur,
  j.median_dur AS median_window_dur,
  j.total_dur AS total_window_dur,
  j.lane_dur,
  j.device_count,
  CASE WHEN j.has_device THEN round(j.compute_pct, 2) END AS compute_pct,
  round(j.comm_pct, 2) AS comm_pct,
  round(j.idle_pct, 2) AS idle_pct,
  j.top_cause,
  round(j.top_cause_pct, 2) AS top_cause_pct,
  j.representative AS steady_representative,
  j.sample_sentence
FROM judged AS j
WHERE
  j.lane_dur > 0;
