-- id: catalog.capture_validity
-- version: 6
-- kind: detector
-- title: Capture validity: GPU activity lost, counter-replay timing, truncated device buffer, skewed or offset clocks, too small a steady sample
-- references: PyTorch docs, torch.profiler (activities, schedule, experimental_config); Kineto's CUPTI range
--   profiler (`cuda_profiler_range` events); judge the capture before anything else
-- what: runtime launches whose device activity is missing (kernels absent or far fewer than
--   launches); launches that each take milliseconds while their kernels take microseconds (CUPTI counter
--   collection / kernel replay); launches that go on after the last recorded device activity (the
--   activity buffer filled or was cut); kernels that start before the call that launched them, or every
--   kernel, the first included, starting tens of ms after its launch (device lag: a clock offset or a queue
--   carried over from before the capture); CUPTI
--   range-profiler events with hardware-counter args and no kernels (counter replay).
-- confirming: per kind: the launches and how many of them have device activity (by correlation id), the
--   median launch and kernel durations, the launches after the last device activity, the kernels that
--   start before their launch; the steady windows' count and share of the windows' time against the cold
--   ones; `kineto-sql info TRACE` for what the loader saw.
-- why: none in the workload; the capture itself is wrong, so every time on the device side (occupancy,
--   idle gaps, kernel shares, launch delays) is missing or distorted. impact_dur is 0; the finding is
--   ranked before every other and carries a severity floor (min_severity).
-- known_problems: launches near the very end of a capture whose kernels ran after it stopped (kept below
--   the thresholds by the minimum counts); a trace trimmed on purpose to a window (test fixtures); a
--   capture of start-up on purpose (the too-small steady sample is then what was wanted).
-- example: launches_without_kernels
-- use_instead: see each row's fix: re-record with ProfilerActivity.CUDA (and a working CUPTI / roctracer), without
--   counter metrics (no experimental_config profiler_metrics, no ncu running), with a shorter active window
--   or a larger activity buffer, or with a schedule that waits past the cold start and captures 3+ steps.
-- needs: none
-- status: preview
-- catalog_row: major.capture_validity
-- default min_launches: 10
-- default max_matched_pct: 50
-- default replay_launch_dur: 1000000
-- default replay_ratio: 10
-- default min_tail_launches: 10
-- default skew_pct: 5
-- default offset_dur: 10ms

-- Why the checks hold on any trace:
-- * Lost GPU activity. Every kernel launch, async memcpy / memset and graph launch puts device work with
--   the call's correlation id on the device; Kineto records both ends. When fewer than half of at least
--   min_launches launches have any device activity, the device side was not recorded (CUPTI / roctracer
--   failed to subscribe, activities=[CPU] only with launches traced, or the buffers were dropped): a few
--   trailing launches at the end of a capture are the only legitimate misses.
-- * Counter replay. A launch call enqueues and returns in 2-20 us. It blocks longer only when the launch
--   queue is full, and then it waits about one kernel ahead of it. When the median launch takes at least
--   replay_launch_dur (1 ms) and at least replay_ratio (10) times the median duration of the kernels it
--   launched, every kernel ran serialized inside its own launch: CUPTI counter collection / kernel replay
--   (profiler metrics, Nsight Compute). Durations and gaps of such a capture are the profiler's. The CUPTI
--   range profiler records no kernels at all, only `cuda_profiler_range` events whose args are hardware
--   counters (`dram__bytes_read.sum`, `smsp__...`): with such events, no device activity and a median launch
--   of at least replay_launch_dur, the missing kernels are the replay's doing, not lost activity.
-- * Truncated device buffer. When at least min_tail_launches launches with no device activity start
--   after the last recorded device activity ended, the activity buffer filled (or the device flush was
--   cut) while the host went on: the end of the capture has no device side. When a steady window starts
--   after the last device activity and holds such launches, that window has no device side at all: the
--   ledger reads its whole width as device idle and the verdict's shares are the buffer's, not the
--   workload's, so the row's floor is high (the timings cannot be read); a tail that stays in the last
--   window's end or after the windows leaves every steady window its device side (medium).
-- * Skewed clocks. A kernel cannot start before the call that launched it begins. When at least skew_pct
--   (5%) of the linked launches (and at least 3) show it, the host and device clocks are misaligned
--   (Kineto's GPU clock conversion, merged traces of several machines): launch delays and idle
--   attribution are off by the skew.
-- * Device lag. A kernel launched on an idle device starts within microseconds of its launch call. When
--   every linked launch (at least min_launches), the first of the capture included, has its device work
--   start at least offset_dur (10 ms) after the call, the device side runs on another clock than the host
--   (a host / device clock offset) or was still draining launches from before the capture: either way the
--   host's lead-in before the first kernel is no host work and launch delays are not queueing of this
--   capture. The whole-capture window is then read over the device's active span (kineto.lib.iterations).
--   The two causes cannot be told apart from the trace, so this row is a note (info, no severity floor).
-- * Too small a steady sample (kineto.lib.steady_sample, its header says why): fewer than 3 steady
--   windows holding under 10% of the windows' time, the rest cold. The capture is its start-up; diagnose
--   reads shares against every window and ranks the cold start with the steady findings. This row costs
--   nothing and has no severity floor (info): the cold start finding carries the time.

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.steady_sample;

-- One row per capture problem found.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_capture_validity(
  -- Launches needed before the lost-activity, replay and skew checks judge anything.
  min_launches LONG,
  -- Lost GPU activity fires when at most this % of the launches have device activity.
  max_matched_pct DOUBLE,
  -- Counter replay fires when the median kernel launch call takes at least this long.
  replay_launch_dur DURATION,
  -- ... and at least this many times the median duration of the device work it launched.
  replay_ratio DOUBLE,
  -- Truncation fires with at least this many unmatched launches after the last device activity.
  min_tail_launches LONG,
  -- Clock skew fires when at least this % of linked launches have their kernel start before the call.
  skew_pct DOUBLE,
  -- Device lag fires when every linked launch has its device work start at least this long after it.
  offset_dur DURATION
)
RETURNS TABLE(
  -- Start of the affected part of the capture.
  ts TIMESTAMP,
  -- Its length.
  dur DURATION,
  -- 0: the capture, not the workload, is at fault.
  impact_dur DURATION,
  -- NULL: about the whole capture.
  step LONG,
  -- One sentence with the numbers.
  evidence STRING,
  -- lost_gpu_activity, counter_replay, truncated_device_buffer, clock_skew, device_lag or
  -- steady_sample_too_small.
  kind STRING,
  -- Runtime calls that put work on a device.
  launch_count LONG,
  -- Of them, with device activity.
  matched_count LONG,
  -- Device activities recorded.
  activity_count LONG,
  -- Median duration of the kernel launch calls.
  median_launch_dur DURATION,
  -- Median device time of what one kernel launch call launched.
  median_kernel_dur DURATION,
  -- Unmatched launches after the last device activity.
  tail_launch_count LONG,
  -- Linked launches whose device work starts before the call.
  skewed_count LONG,
  -- Shortest delay from a linked launch call to the start of its device work (NULL without any).
  min_launch_delay_dur DURATION,
  -- CUPTI range-profiler events with hardware-counter args.
  counter_range_count LONG,
  -- Severity floor: high when device numbers are meaningless, medium when part of them are, NULL (none)
  -- for a too small steady sample.
  min_severity STRING,
  -- The fix for this kind.
  fix STRING
) AS
WITH
  l AS (
    SELECT id, ts, dur, name, gpu_count, gpu_ts, gpu_dur FROM kineto_launches
  ),
  -- CUPTI range-profiler events that carry hardware counters (`unit__counter.rollup` args)
  counter_ranges AS MATERIALIZED (
    SELECT count(*) AS n
    FROM slice AS s
    JOIN kineto_event_categories AS c
      ON c.category = s.category
    WHERE
      c.event_class = 'counter_range'
      AND EXISTS (SELECT 1 FROM args AS a WHERE a.arg_set_id = s.arg_set_id AND a.key GLOB 'args.*__*')
  ),
  last_act AS MATERIALIZED (
    SELECT max(ts + dur) AS end_ts, count(*) AS n FROM kineto_kernels
  ),
  -- Every count over the launches in one pass.
  counts AS MATERIALIZED (
    SELECT
      count(*) AS n_launch,
      count(CASE WHEN l.gpu_count > 0 THEN 1 END) AS n_matched,
      -- The launches up to the end of the last device activity (all of them without any): a truncated
      -- buffer's tail is judged on its own below, not as lost activity.
      count(CASE WHEN a.end_ts IS NULL OR l.ts <= a.end_ts THEN 1 END) AS n_body,
      count(CASE WHEN l.gpu_count > 0 AND l.ts <= a.end_ts THEN 1 END) AS n_body_matched,
      min(l.ts) AS first_ts,
      max(l.ts + l.dur) AS last_ts,
      count(CASE WHEN coalesce(l.gpu_count, 0) = 0 AND l.ts > a.end_ts THEN 1 END) AS n_tail,
      min(CASE WHEN coalesce(l.gpu_count, 0) = 0 AND l.ts > a.end_ts THEN l.ts END) AS tail_ts,
      count(CASE WHEN l.gpu_count > 0 AND l.gpu_ts < l.ts THEN 1 END) AS n_skew,
      min(CASE WHEN l.gpu_count > 0 THEN l.gpu_ts - l.ts END) AS min_delay,
      count(CASE WHEN l.name GLOB '*Launch*' AND l.gpu_count > 0 THEN 1 END) AS n_kernel_calls
    FROM l
    CROSS JOIN last_act AS a
  ),
  kernel_calls AS (
    SELECT dur, gpu_dur
    FROM l
    WHERE
      name GLOB '*Launch*'
      AND gpu_count > 0
  ),
  -- every kernel launch call, with or without device activity (the counter-range form has none)
  all_kernel_calls AS (
    SELECT dur
    FROM l
    WHERE
      name GLOB '*Launch*'
  ),
  median_at AS (
    SELECT (n_kernel_calls + 1) / 2 - 1 AS k FROM counts
  ),
  stats AS MATERIALIZED (
    SELECT
      c.n_launch,
      c.n_matched,
      c.n_body,
      c.n_body_matched,
      a.n AS n_act,
      c.first_ts,
      c.last_ts,
      -- Medians (the ((n + 1) / 2)-th smallest) by a sort with an offset.
      (SELECT dur FROM kernel_calls ORDER BY dur LIMIT 1 OFFSET (SELECT k FROM median_at)) AS med_launch,
      (SELECT gpu_dur FROM kernel_calls ORDER BY gpu_dur LIMIT 1 OFFSET (SELECT k FROM median_at)) AS med_kernel,
      c.n_kernel_calls,
      a.end_ts AS last_act_end,
      c.n_tail,
      c.tail_ts,
      c.n_skew,
      c.min_delay,
      (SELECT count(*) FROM all_kernel_calls) AS n_all_kernel_calls,
      (
        SELECT dur
        FROM all_kernel_calls
        ORDER BY dur
        LIMIT 1
        OFFSET ((SELECT count(*) FROM all_kernel_calls) + 1) / 2 - 1
      ) AS med_all_launch,
      (SELECT n FROM counter_ranges) AS n_ranges
    FROM counts AS c
    CROSS JOIN last_act AS a
  ),
  -- counter-range replay: range-profiler counters, no device activity, launches of replay length
  range_replay AS (
    SELECT
      s.n_ranges > 0
      AND coalesce(s.n_act, 0) = 0
      AND s.n_all_kernel_calls >= $min_launches
      AND s.med_all_launch >= $replay_launch_dur AS yes
    FROM stats AS s
  ),
  found AS (
    SELECT
      s.first_ts AS ts,
      s.last_ts - s.first_ts AS dur,
      'lost_gpu_activity' AS kind,
      'high' AS min_severity,
      printf(
        'GPU activity lost: %d of %d launches (%.0f%%) have any device activity (%d device activities recorded): the device side of this capture is missing, so occupancy, idle time and kernel numbers are not measured.',
        s.n_body_matched, s.n_body, 100.0 * s.n_body_matched / s.n_body, coalesce(s.n_act, 0)
      ) AS evidence,
      'Re-record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] and check that CUPTI (CUDA) or roctracer (ROCm) loads: the profiler prints CUPTI errors at start; nothing else (Nsight, another profiler) may hold the CUPTI subscription.' AS fix
    FROM stats AS s
    WHERE
      s.n_body >= $min_launches
      AND 100.0 * s.n_body_matched / s.n_body <= $max_matched_pct
      AND NOT (SELECT yes FROM range_replay)
    UNION ALL
    SELECT
      s.first_ts,
      s.last_ts - s.first_ts,
      'counter_replay',
      'high',
      printf(
        'Counter-replay capture: the median kernel launch call takes %.3f ms, %.0fx the median %.3f ms of device work it launches (%d launches): every kernel ran serialized inside its launch (CUPTI counter collection / kernel replay), so durations and gaps are the profiler''s.',
        s.med_launch / 1e6, 1.0 * s.med_launch / max(s.med_kernel, 1), s.med_kernel / 1e6, s.n_kernel_calls
      ),
      'Profile timing without counters: drop experimental_config profiler_metrics / ProfilerActivity counters, do not run under Nsight Compute; collect counters in a separate run on a few kernels.'
    FROM stats AS s
    WHERE
      s.n_kernel_calls >= $min_launches
      AND s.med_launch >= $replay_launch_dur
      AND s.med_launch >= $replay_ratio * s.med_kernel
    UNION ALL
    SELECT
      s.first_ts,
      s.last_ts - s.first_ts,
      'counter_replay',
      'high',
      printf(
        'Counter-replay capture: %d CUPTI range-profiler events carry hardware counters, no kernel was recorded and the median kernel launch call takes %.3f ms (%d launches): each kernel was replayed to collect counters inside its launch, so the capture has no workload timing (this is not lost GPU activity).',
        s.n_ranges, s.med_all_launch / 1e6, s.n_all_kernel_calls
      ),
      'Profile timing without counters: drop experimental_config profiler_metrics / the CUPTI range profiler, do not run under Nsight Compute; collect counters in a separate run on a few kernels.'
    FROM stats AS s
    WHERE
      (SELECT yes FROM range_replay)
    UNION ALL
    SELECT
      s.tail_ts,
      s.last_ts - s.tail_ts,
      'truncated_device_buffer',
      -- a steady window with launches but no device side: its idle is the buffer's
      CASE
        WHEN EXISTS (
          SELECT 1
          FROM kineto_iterations AS it
          WHERE
            NOT it.is_cold
            AND it.ts >= s.last_act_end
            AND it.ts < s.last_ts
        ) THEN 'high'
        ELSE 'medium'
      END,
      printf(
        'Device activity stops %.3f ms before the host does: %d launches after the last recorded device activity have none (%.1f%% of the capture''s launch span): the activity buffer filled or its flush was cut, so the end of the capture has no device side.',
        (s.last_ts - s.last_act_end) / 1e6, s.n_tail, 100.0 * (s.last_ts - s.tail_ts) / max(s.last_ts - s.first_ts, 1)
      ),
      'Capture fewer steps (schedule active=2-3) or raise the device activity buffer (KINETO_CONFIG / CUPTI buffer size); make sure the profiler is stopped (prof.stop() / leaving the with block) before the process exits.'
    FROM stats AS s
    WHERE
      s.n_tail >= $min_tail_launches
    UNION ALL
    SELECT
      s.first_ts,
      s.last_ts - s.first_ts,
      'clock_skew',
      'medium',
      printf(
        'Host and device clocks disagree: %d of %d linked launches (%.1f%%) have their device work start before the launch call began, which cannot happen on one clock: launch delays and idle attribution are off by the skew.',
        s.n_skew, s.n_matched, 100.0 * s.n_skew / max(s.n_matched, 1)
      ),
      'Re-record on one machine per trace file and a current torch / Kineto (GPU timestamp conversion); do not merge traces of several hosts into one file.'
    FROM stats AS s
    WHERE
      s.n_matched >= $min_launches
      AND s.n_skew >= 3
      AND 100.0 * s.n_skew / s.n_matched >= $skew_pct
    UNION ALL
    SELECT
      s.first_ts,
      s.last_ts - s.first_ts,
      'device_lag',
      NULL,
      printf(
        'Device lag: every one of %d linked launches, the first included, has its device work start at least %.3f ms after the call: the host and device clocks are offset or the device was still draining launches from before the capture, so the host''s lead-in before the first kernel is not host work and launch delays are not this capture''s queueing.',
        s.n_matched, s.min_delay / 1e6
      ),
      'Read device time over the device''s own active span; if the lag is a clock offset, re-record with a current torch / Kineto (GPU timestamp conversion) on one machine per trace file.'
    FROM stats AS s
    WHERE
      s.n_matched >= $min_launches
      AND s.min_delay >= $offset_dur
    UNION ALL
    SELECT
      (SELECT min(ts) FROM kineto_iterations),
      (SELECT max(ts + dur) - min(ts) FROM kineto_iterations),
      'steady_sample_too_small',
      NULL,
      ss.sentence,
      'Profile with schedule(wait=1, warmup=1, active=3) or more steps so the captured steps are past the cold start (lazy init, allocator warm-up, autotuning, compilation); the first step''s cost is then its own reading, not the capture.'
    FROM kineto_steady_sample AS ss
    WHERE
      NOT ss.representative
  )
SELECT
  f.ts,
  f.dur,
  0 AS impact_dur,
  NULL AS step,
  f.evidence,
  f.kind,
  s.n_launch AS launch_count,
  s.n_matched AS matched_count,
  coalesce(s.n_act, 0) AS activity_count,
  coalesce(s.med_launch, s.med_all_launch) AS median_launch_dur,
  s.med_kernel AS median_kernel_dur,
  s.n_tail AS tail_launch_count,
  s.n_skew AS skewed_count,
  s.min_delay AS min_launch_delay_dur,
  coalesce(s.n_ranges, 0) AS counter_range_count,
  f.min_severity,
  f.fix
FROM found AS f
CROSS JOIN stats AS s
ORDER BY f.kind;
