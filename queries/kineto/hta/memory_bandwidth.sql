-- id: hta.memory_bandwidth
-- version: 1
-- kind: hta
-- title: Memcpy / memset bandwidth per kind (HtoD, DtoH, DtoD, Memset): bytes, busy time and concurrent bandwidth
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces; HolisticTraceAnalysis
--   (TraceCounters memory bandwidth)
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE

-- Kind = the first 11 characters of the name ("Memcpy HtoD") or "Memset". The concurrent bandwidth
-- series adds Kineto's own args "memory bandwidth (GB/s)" at each event's start and removes it at its
-- end (a 0 us event counts as 1 us, as in HTA); count..max are HTA's describe() of its positive
-- values at change points (not time-weighted). bytes / busy time is the time-weighted figure.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

-- One row per memory kind.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_memory_bandwidth(
  -- TRUE = HTA 0.5.0's event set (memory-named events with stream != -1, last ProfilerStep dropped); FALSE =
  -- memcpy/memset events of the whole trace.
  hta_compat BOOL
)
RETURNS TABLE(
  -- Memcpy HtoD, Memcpy DtoH, Memcpy DtoD, Memcpy PtoP, Memset ...
  kind STRING,
  -- Events.
  events LONG,
  -- Bytes moved (args.bytes).
  bytes LONG,
  -- Summed event durations, us.
  busy_us DOUBLE,
  -- bytes / busy time, GB/s.
  effective_gbps DOUBLE,
  -- Positive change points of the concurrent-bandwidth series (HTA's count).
  count LONG,
  -- Mean concurrent bandwidth over change points, GB/s.
  mean_gbps DOUBLE,
  -- Sample standard deviation, GB/s.
  std_gbps DOUBLE,
  -- Smallest, GB/s.
  min_gbps DOUBLE,
  -- Median, GB/s.
  p50_gbps DOUBLE,
  -- Largest, GB/s.
  max_gbps DOUBLE
) AS
WITH ev AS MATERIALIZED (
  SELECT
    g.id,
    IIF(g.name GLOB 'Memset*', 'Memset', IIF(g.name GLOB 'Memcpy*', SUBSTR(g.name, 1, 11), 'Memcpy Unknown')) AS kind,
    g.ts,
    MAX(g.dur, 1000) AS dur,
    g.dur AS raw_dur,
    COALESCE(extract_arg(s.arg_set_id, 'args.memory bandwidth (GB/s)'), 0) AS bw,
    COALESCE(extract_arg(s.arg_set_id, 'args.bytes'), 0) AS bytes
  FROM kineto_hta_gpu_events($hta_compat) g
  JOIN slice s USING (id)
  WHERE g.kernel_type = 'MEMORY'
),
changes AS (
  SELECT kind, ts AS t, bw AS delta, id, 1 AS ord FROM ev
  UNION ALL
  SELECT kind, ts + dur AS t, -bw AS delta, id, 0 AS ord FROM ev
),
series AS (
  SELECT kind, SUM(delta) OVER (PARTITION BY kind ORDER BY t, ord, id ROWS UNBOUNDED PRECEDING) AS v
  FROM changes
),
pos AS (
  SELECT kind, v,
    ROW_NUMBER() OVER (PARTITION BY kind ORDER BY v) - 1 AS i,
    COUNT(*) OVER (PARTITION BY kind) AS n,
    AVG(v) OVER (PARTITION BY kind) AS mean
  FROM series
  WHERE v > 1e-9
),
stats AS (
  SELECT kind, n, mean,
    IIF(n > 1, SQRT(SUM((v - mean) * (v - mean)) / (n - 1)), NULL) AS std,
    MIN(v) AS min_v, MAX(v) AS max_v,
    AVG(IIF(i IN (CAST((n - 1) / 2 AS INT), CAST(n / 2 AS INT)), v, NULL)) AS p50
  FROM pos
  GROUP BY kind
),
totals AS (
  SELECT kind, COUNT(*) AS events, SUM(bytes) AS bytes, SUM(raw_dur) AS busy_ns
  FROM ev
  GROUP BY kind
)
SELECT
  t.kind,
  t.events,
  t.bytes,
  t.busy_ns / 1e3 AS busy_us,
  IIF(t.busy_ns > 0, 1.0 * t.bytes / t.busy_ns, NULL) AS effective_gbps,
  COALESCE(s.n, 0) AS count,
  s.mean AS mean_gbps,
  s.std AS std_gbps,
  s.min_v AS min_gbps,
  s.p50 AS p50_gbps,
  s.max_v AS max_gbps
FROM totals t
LEFT JOIN stats s USING (kind)
ORDER BY t.kind;
