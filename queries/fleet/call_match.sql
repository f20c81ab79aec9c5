-- id: fleet.call_match
-- version: 1
-- kind: fleet
-- title: Every collective call matched across ranks, and whether the match can be trusted
-- reads: collectives
-- why: NCCL and gloo make every rank of a process group issue the group's collectives in the same order, so
--   the n-th call of a (step, process group, collective) is one call on every rank: the sequence number of
--   reading.collective_calls is that order within the step. The match holds only when every rank holds the
--   same calls. A sampled or partial capture breaks it silently: one rank missed a call, so its n-th call
--   is the others' (n+1)-th and every later pair is two different calls. Such a match is named here instead
--   of measured: `no sequence number`, `call counts differ across ranks` (within a step that every rank
--   captured, one rank holds more calls of that collective), `message sizes differ across ranks` (all_reduce,
--   all_gather, reduce_scatter, broadcast, reduce and barrier move the same message on every rank; all_to_all
--   may not). A step that some ranks did not capture at all is a difference of capture windows, not of calls:
--   its calls are `step not captured on every rank` and are left out, nothing more. A call on a single rank is
--   `on one rank only`. The rest are `ok`; fleet.clock_offsets then checks them against time.
CREATE OR REPLACE TABLE fleet_call_match AS
WITH calls AS (
  SELECT rank, step, coalesce(pg, '') AS pg, collective, seq, dur, in_bytes FROM collectives
),
group_ranks AS (SELECT pg, count(DISTINCT rank) AS pg_ranks FROM calls GROUP BY pg),
step_ranks AS (SELECT pg, step, count(DISTINCT rank) AS step_ranks FROM calls GROUP BY pg, step),
per_rank AS (SELECT step, pg, collective, rank, count(*) AS n FROM calls GROUP BY step, pg, collective, rank),
counts AS (
  SELECT p.step, p.pg, p.collective,
         min(p.n) <> max(p.n) OR count(*) < any_value(s.step_ranks) AS counts_differ
  FROM per_rank p JOIN step_ranks s ON s.pg = p.pg AND s.step IS NOT DISTINCT FROM p.step
  GROUP BY p.step, p.pg, p.collective
),
matched AS (
  SELECT step, pg, collective, seq, count(*) AS ranks, count(DISTINCT rank) AS distinct_ranks,
         min(dur) AS latency_ns, min(in_bytes) AS min_bytes, max(in_bytes) AS max_bytes
  FROM calls GROUP BY step, pg, collective, seq
)
SELECT m.step, m.pg, m.collective, m.seq, m.ranks, m.latency_ns,
       CASE WHEN m.seq IS NULL THEN 'no sequence number'
            WHEN m.ranks < 2 AND g.pg_ranks < 2 THEN 'on one rank only'
            WHEN s.step_ranks < g.pg_ranks THEN 'step not captured on every rank'
            WHEN c.counts_differ OR m.ranks > m.distinct_ranks THEN 'call counts differ across ranks'
            WHEN m.collective IN ('all_reduce', 'all_gather', 'reduce_scatter', 'broadcast', 'reduce', 'barrier')
                 AND m.min_bytes <> m.max_bytes THEN 'message sizes differ across ranks'
            ELSE 'ok' END AS status
FROM matched m
JOIN group_ranks g ON g.pg = m.pg
JOIN step_ranks s ON s.pg = m.pg AND s.step IS NOT DISTINCT FROM m.step
JOIN counts c ON c.pg = m.pg AND c.collective = m.collective AND c.step IS NOT DISTINCT FROM m.step;
