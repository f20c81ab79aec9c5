-- id: hta.comm_comp_overlap
-- version: 4
-- kind: hta
-- title: Communication-computation overlap: % of communication time with a compute kernel running
-- references: "torch.profiler & HTA: the Framework View", HTA on real public traces (HTA comm-comp overlap
--   per rank); HolisticTraceAnalysis
-- needs: gpu
-- status: stable
-- default hta_compat: FALSE

-- overlap_pct = 100 * |union(compute) intersect union(communication)| / |union(communication)|,
-- HTA's definition (memory kernels ignored). No row when the trace has no communication kernels
-- (HTA returns NaN there). All three times are sums of gpu_events' busy states (one sweep of the
-- events, built once per trace in hta_compat), not a merge and an intersection per query.

INCLUDE PERFETTO MODULE kineto.hta.gpu_events;

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
WITH st AS (
  SELECT state, dur_ns FROM _kineto_hta_mode_states!($hta_compat)
),
tot AS (
  SELECT
    SUM(IIF(state & 2, dur_ns, 0)) AS comm_ns,
    SUM(IIF(state & 1, dur_ns, 0)) AS comp_ns,
    SUM(IIF(state & 3 = 3, dur_ns, 0)) AS overlap_ns
  FROM st
)
SELECT
  tot.comm_ns / 1e3 AS comm_us,
  tot.comp_ns / 1e3 AS compute_us,
  tot.overlap_ns / 1e3 AS overlap_us,
  100.0 * tot.overlap_ns / tot.comm_ns AS overlap_pct,
  (SELECT COUNT(*) FROM _kineto_hta_events!($hta_compat) WHERE kernel_type = 'COMMUNICATION') AS comm_kernels
FROM tot
WHERE tot.comm_ns > 0;
