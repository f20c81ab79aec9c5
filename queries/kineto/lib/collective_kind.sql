-- version: 1

-- Canonical collective names: GLOB over the lower-cased name with underscores removed (nccl:all_reduce,
-- allreduce, _allgather_base, ncclDevKernel_AllGather_RING_LL, ncclKernel_SendRecv, RCCL's
-- ncclKernel_AllReduce_RING_LL_Sum_bf16...), lowest priority first. RCCL's ncclDevKernel_Generic names no
-- collective: kineto.lib.collectives names it by the nccl: annotation Kineto copies onto its stream.
CREATE OR REPLACE PERFETTO TABLE _kineto_collective_kind_names(
  -- GLOB pattern.
  pattern STRING,
  -- all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv, barrier, gather, scatter.
  collective STRING,
  -- Lower wins.
  priority LONG
) AS
WITH r(pattern, collective, priority) AS (
  VALUES
    ('*allreduce*', 'all_reduce', 1),
    ('*allgather*', 'all_gather', 1),
    ('*reducescatter*', 'reduce_scatter', 1),
    ('*alltoall*', 'all_to_all', 1),
    ('*broadcast*', 'broadcast', 2),
    ('*sendrecv*', 'send_recv', 2),
    ('*barrier*', 'barrier', 2),
    ('*reduce*', 'reduce', 3),
    ('*send*', 'send_recv', 3),
    ('*recv*', 'send_recv', 3),
    ('*gather*', 'gather', 4),
    ('*scatter*', 'scatter', 4)
)
SELECT pattern, collective, priority FROM r;

-- The collective a name (a kernel, an nccl: / gloo: / c10d:: op, a `Collective name` arg) says, or NULL.
CREATE OR REPLACE PERFETTO FUNCTION kineto_collective_kind(
  -- The name.
  name STRING
)
RETURNS STRING AS
SELECT r.collective
FROM _kineto_collective_kind_names AS r
WHERE
  replace(lower($name), '_', '') GLOB r.pattern
ORDER BY r.priority
LIMIT 1;
