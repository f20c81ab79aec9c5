-- id: guide.activity_buffer_gaps
-- version: 2
-- kind: guide
-- title: Activity buffer gaps: device idle time caused by the profiler's own buffer requests, and the initial CPU-GPU offset
-- references: "Profiling in PyTorch: A Beginner's Guide to torch.profiler", "Key GPU Lane Indicators:
--   Activity Buffer Requests"
-- needs: gpu
-- status: stable

-- Kineto writes its own overhead as `Activity Buffer Request` rows (category `overhead`). A device idle
-- gap (all streams idle) that overlaps one is charged to the profiler, not to the model. The initial
-- offset is the time from the first host op or runtime call to the first device activity: part of it
-- is launch latency, and a buffer request in it is the profiler setting up.

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.gpu_idle;

-- The profiler's buffer-request rows.
CREATE OR REPLACE PERFETTO TABLE _kineto_guide_buffer_requests(
  -- Slice id.
  id JOINID(slice.id),
  -- Start.
  ts TIMESTAMP,
  -- End.
  end_ts TIMESTAMP
) AS
SELECT
  s.id,
  s.ts,
  s.ts + s.dur AS end_ts
FROM slice AS s
WHERE
  s.name GLOB 'Activity Buffer Request*'
  OR (
    s.category IN (SELECT category FROM kineto_event_categories WHERE event_class = 'profiler')
    AND s.name GLOB '*uffer*'
  )
ORDER BY s.ts;

-- One `initial_offset` row per device, and one `buffer_gap` row per device idle gap that a buffer
-- request overlaps.
CREATE OR REPLACE PERFETTO FUNCTION kineto_guide_activity_buffer_gaps()
RETURNS TABLE(
  -- initial_offset or buffer_gap.
  kind STRING,
  -- Device index.
  device LONG,
  -- Start of the interval.
  ts TIMESTAMP,
  -- Its length.
  dur DURATION,
  -- Part of it covered by buffer requests.
  buffer_dur DURATION,
  -- Buffer requests overlapping it.
  buffer_requests LONG,
  -- One sentence with the numbers.
  evidence STRING
) AS
WITH
  first_host AS (
    SELECT min(s.ts) AS ts
    FROM slice AS s
    JOIN kineto_event_categories AS c
      ON c.category = s.category
    WHERE
      c.event_class IN ('cpu_op', 'runtime')
  ),
  offsets AS (
    SELECT
      'initial_offset' AS kind,
      k.device,
      h.ts,
      min(k.ts) - h.ts AS dur
    FROM kineto_kernels AS k
    CROSS JOIN first_host AS h
    WHERE
      h.ts IS NOT NULL
    GROUP BY k.device
  ),
  gaps AS (
    SELECT
      'buffer_gap' AS kind,
      g.device,
      g.ts,
      g.dur
    FROM kineto_gpu_idle AS g
    WHERE
      g.stream IS NULL
      AND EXISTS (
        SELECT 1
        FROM _kineto_guide_buffer_requests AS b
        WHERE
          b.ts < g.ts + g.dur
          AND b.end_ts > g.ts
      )
  ),
  rows AS (
    SELECT *
    FROM offsets
    WHERE
      dur > 0
    UNION ALL
    SELECT *
    FROM gaps
  ),
  covered AS (
    SELECT
      r.*,
      coalesce(
        (
          SELECT sum(min(b.end_ts, r.ts + r.dur) - max(b.ts, r.ts))
          FROM _kineto_guide_buffer_requests AS b
          WHERE
            b.ts < r.ts + r.dur
            AND b.end_ts > r.ts
        ),
        0
      ) AS buffer_dur,
      (
        SELECT count(*)
        FROM _kineto_guide_buffer_requests AS b
        WHERE
          b.ts < r.ts + r.dur
          AND b.end_ts > r.ts
      ) AS buffer_requests
    FROM rows AS r
  )
SELECT
  kind,
  device,
  ts,
  dur,
  buffer_dur,
  buffer_requests,
  CASE kind
    WHEN 'initial_offset'
      THEN printf(
        'device %d starts its first activity %.3f ms after the first host event; %d profiler buffer requests cover %.3f ms of it',
        device, dur / 1e6, buffer_requests, buffer_dur / 1e6
      )
    ELSE printf(
      'device %d idle %.3f ms while the profiler requested activity buffers (%d requests, %.3f ms): profiler overhead, not the model',
      device, dur / 1e6, buffer_requests, buffer_dur / 1e6
    )
  END AS evidence
FROM covered
ORDER BY ts, device;
