-- id: fleet.collective_skew
-- version: 1
-- kind: fleet
-- title: Every collective call matched across ranks: latency, start / end skew, the wait of the early ranks
-- reads: collectives
-- why: NCCL and gloo make every rank of a process group issue the group's collectives in the same order, so
--   the n-th call of a (step, process group, collective) is one call on every rank (kineto_sql.collectives
--   matches them the same way). A rank's kernel starts when it arrives and ends when the data is through:
--   the last rank to arrive waits for nobody, so the shortest duration is the transfer (latency), the start
--   skew (last start - first start, on the job's clock) is the imbalance before the call, and the early
--   ranks' wait is the sum over ranks of (last start - own start). Ties of first / last go to the lowest rank.
CREATE OR REPLACE VIEW fleet_collective_skew AS
SELECT step, coalesce(pg, '') AS pg, collective, seq,
       count(*) AS ranks,
       min(dur) / 1e3 AS latency_us,
       (max(start_ns) - min(start_ns)) / 1e3 AS start_skew_us,
       (max(start_ns + dur) - min(start_ns + dur)) / 1e3 AS end_skew_us,
       sum(max_start_ns - start_ns) / 1e3 AS wait_us,
       arg_min(rank, [start_ns, rank]) AS first_rank,
       arg_max(rank, [start_ns, -rank]) AS last_rank
FROM (SELECT *, max(start_ns) OVER (PARTITION BY step, coalesce(pg, ''), collective, seq) AS max_start_ns
      FROM collectives)
GROUP BY step, coalesce(pg, ''), collective, seq
ORDER BY step, pg, collective, seq;
