-- id: fleet.rank_lateness
-- version: 1
-- kind: fleet
-- title: Per rank: how often it arrived last at a collective, the others' wait it caused, its mean lateness
-- reads: collectives, fleet_collective_skew
-- why: a straggler shows in the collectives as the rank that arrives last, call after call; the wait it
--   causes is the early ranks' wait of the calls it closed. Lateness is a rank's start behind the first
--   rank of each call, averaged over the calls it took part in: a rank late on average is late before every
--   collective (compute, data, host), not in one unlucky call.
CREATE OR REPLACE VIEW fleet_rank_lateness AS
WITH calls AS (
  SELECT c.rank, c.start_ns, k.*, min(c.start_ns) OVER (PARTITION BY c.step, coalesce(c.pg, ''), c.collective, c.seq)
           AS first_start_ns
  FROM collectives c
  JOIN fleet_collective_skew k
    ON k.step IS NOT DISTINCT FROM c.step AND k.pg = coalesce(c.pg, '') AND k.collective = c.collective
       AND k.seq = c.seq
)
SELECT rank, count(*) AS calls,
       count(*) FILTER (WHERE last_rank = rank) AS arrived_last,
       coalesce(sum(wait_us) FILTER (WHERE last_rank = rank), 0.0) AS wait_caused_us,
       avg(start_ns - first_start_ns) / 1e3 AS mean_lateness_us
FROM calls
GROUP BY rank
ORDER BY rank;
