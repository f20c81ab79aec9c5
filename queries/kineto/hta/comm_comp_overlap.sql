-- id: hta.comm_comp_overlap
-- version: 2
-- kind: hta
-- title: Communication-computation overlap: % of communication time with a compute kernel running
-- source: seed 000 section 4-5 (HTA comm-comp overlap per rank); research/peers.md 1.2
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE
-- locked: 2 9dfb596b536d083d
-- lib: hta.gpu_events@3 lib.event_categories@2 lib.interval_merge@2 lib.kernels@3

-- overlap_pct = 100 * |union(compute) intersect union(communication)| / |union(communication)|,
-- HTA's definition (memory kernels ignored). No row when the trace has no communication kernels
-- (HTA returns NaN there).

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;
INCLUDE PERFETTO MODULE intervals.intersect;

-- One row: how much of the merged communication time overlaps merged compute time.
CREATE OR REPLACE PERFETTO FUNCTION kineto_hta_comm_comp_overlap(
  -- TRUE = HTA 0.5.0's event set (stream != -1, last ProfilerStep dropped) and name rules (`^nccl.*Kernel`
  -- only); FALSE = kernels, memcpy and memset of the whole trace, any nccl/rccl kernel is communication.
  hta_compat BOOL
)
RETURNS TABLE(
  -- Time at least one communication kernel runs, us.
  comm_us DOUBLE,
  -- Time at least one compute kernel runs, us.
  compute_us DOUBLE,
  -- Communication time during which a compute kernel also runs, us.
  overlap_us DOUBLE,
  -- overlap_us / comm_us, % (HTA's comp_comm_overlap_pctg).
  overlap_pct DOUBLE,
  -- Communication kernels read.
  comm_kernels LONG
) AS
WITH ev AS MATERIALIZED (
  SELECT ts, end_ts, kernel_type FROM kineto_hta_gpu_events($hta_compat)
  WHERE kernel_type IN ('COMPUTATION', 'COMMUNICATION')
),
merged AS MATERIALIZED (
  SELECT row_number() OVER () AS id, k, ts, end_ts
  FROM _kineto_hta_merge!((SELECT kernel_type AS k, ts, end_ts FROM ev))
),
-- Communication x computation overlap: one interval intersection of the two merged sets (each is
-- disjoint), not a join of every pair.
inter AS (
  SELECT SUM(ii.dur) AS overlap_ns
  FROM _interval_intersect!(
    (
      (SELECT id, ts, end_ts - ts AS dur FROM merged WHERE k = 'COMMUNICATION'),
      (SELECT id, ts, end_ts - ts AS dur FROM merged WHERE k = 'COMPUTATION')
    ),
    ()
  ) AS ii
),
tot AS (
  SELECT
    SUM(IIF(k = 'COMMUNICATION', end_ts - ts, 0)) AS comm_ns,
    SUM(IIF(k = 'COMPUTATION', end_ts - ts, 0)) AS comp_ns
  FROM merged
)
SELECT
  tot.comm_ns / 1e3 AS comm_us,
  tot.comp_ns / 1e3 AS compute_us,
  COALESCE(inter.overlap_ns, 0) / 1e3 AS overlap_us,
  100.0 * COALESCE(inter.overlap_ns, 0) / tot.comm_ns AS overlap_pct,
  (SELECT COUNT(*) FROM ev WHERE kernel_type = 'COMMUNICATION') AS comm_kernels
FROM tot, inter
WHERE tot.comm_ns > 0;
